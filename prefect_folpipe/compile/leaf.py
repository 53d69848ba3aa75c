"""The one leaf: the Prefect task running one agent pass, built from plain data.

Every agent pass of a run, whatever runs it (awaited in the flow's process, or submitted to a
Dask worker), is a Prefect ``Task`` over :func:`run_leaf` with the same ``task_options()``:
retries and their delays, a ``retry_condition_fn`` that never retries author errors, the
timeout, tags, and the content-keyed checkpoint (``CheckpointKey``; result storage, and the
run's checkpoint scope of ``compile.scope``: lineage, ``--fresh``, ``settings.cache`` and its
ttl). Its arguments are picklable: a ``LeafRef`` (the run's ``RunSpec``, the task path, the
phase) and the run's live runtime in a ``ProcessLocal`` box, which arrives empty in another
process; there :func:`run_leaf` rebuilds the runtime from the spec (see ``compile.dask``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from prefect import Task as PrefectTask
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.logging import get_run_logger

from .. import telemetry
from ..plan import NodePlan, cache_key, key_parts, write_manifest
from ..plan.contextops import ContextBox, unbox
from ..tools.approval import TOOL_APPROVER
from ..workflow.names import slug
from ..workflow.tree import Task
from .checkpoints import SERIALIZER, checkpoint_storage
from .passes import PassRuntime, Payload, check_serialisable, payload_of
from .report import WRITER, CoalescedLog
from .retry import prefect_retry_delay, retry_on_of, should_retry
from .shared import RunSpec
from .sidewrites import SIDE_WRITES
from .storekey import seal
from .tags import tag_task_run

KeyMemo = dict[tuple[Any, ...], str]
"""Checkpoint keys already computed for one pass's input (``ContextBox.keys``)."""


class ProcessLocal:
    """A value that stays in its process: copies share it, a pickled copy arrives empty."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProcessLocal, ())

    def __copy__(self) -> ProcessLocal:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ProcessLocal:
        return self

    def __repr__(self) -> str:
        return "<process-local>" if self.value is not None else "<process-local: empty>"


@dataclass(frozen=True)
class LeafRef:
    """Which pass a leaf task runs: the run, the task path, the phase (plain data)."""

    run: RunSpec
    path: str
    phase: str
    late_tags: tuple[str, ...] = ()
    """Tags the task run gets as it starts (see ``compile.tags``)."""


async def run_leaf(
    ref: LeafRef, live: ProcessLocal, context: Any, label: str, scope: list | None = None
) -> Payload:
    """The function of every leaf task: one agent pass of ``ref.path``, checked and reported."""
    memo = context.keys if isinstance(context, ContextBox) else None
    return await execute_pass(runtime_of(ref, live), ref, unbox(context), label, scope, memo)


def runtime_of(ref: LeafRef, live: ProcessLocal) -> PassRuntime:
    """The run's live runtime in the flow's process; elsewhere, rebuilt from ``ref.run``."""
    if live.value is not None:
        return live.value
    from .dask import remote_runtime

    return remote_runtime(ref.run)


async def execute_pass(
    runtime: PassRuntime,
    ref: LeafRef,
    context: dict[str, Any],
    label: str,
    scope: list | None,
    memo: KeyMemo | None = None,
) -> Payload:
    """One pass in its span (``telemetry``: ``invoke_agent``, in the run's trace)."""
    task, task_run = runtime.task(ref.path), TaskRunContext.get()
    attempt = task_run.task_run.run_count if task_run else 1
    with telemetry.agent_span(
        task.path,
        agent=task.runs_agent,
        phase=ref.phase,
        iteration=scope,
        attempt=attempt,
        label=label,
        traceparent=ref.run.trace,
    ) as span:
        payload = await _execute_pass(runtime, ref, context, label, scope, memo)
        span.finish(payload)
        return payload


async def _execute_pass(
    runtime: PassRuntime,
    ref: LeafRef,
    context: dict[str, Any],
    label: str,
    scope: list | None,
    memo: KeyMemo | None,
) -> Payload:
    WRITER.touch()
    task = runtime.task(ref.path)
    task_run = TaskRunContext.get()
    tag_task_run(task_run, ref.late_tags)
    attempt = task_run.task_run.run_count if task_run else 1
    await runtime.attempt(task, attempt)
    log = CoalescedLog(get_run_logger())
    approver = TOOL_APPROVER.set(runtime.tool_approver(task, ref.phase, scope, context))
    try:
        provider = runtime.services.provider_for(task) if task.runs_agent else None
        outcome = await runtime.runner(
            task,
            runtime.workflow,
            context,
            provider=provider,
            phase=ref.phase,
            iteration=scope[-1] if scope else None,
            logger=log,
            ledger=runtime.services.ledger,
            journal=runtime.journal(task, ref.phase, scope),
        )
    except Exception as exc:  # a failed task's report is where one is needed most
        log.close()
        if runtime.artifact_level == "all":
            await runtime.publish_failure(task, ref.phase, label, exc, attempt)
        raise
    finally:  # a cancelled or suspended pass too
        log.close()
        TOOL_APPROVER.reset(approver)
    WRITER.touch()
    payload = payload_of(outcome)
    check_serialisable(task, payload)
    shared = ref.run.checkpoints.shared(task)  # a lineage-only checkpoint is no one's next
    if task.settings.cache and runtime.spec.manifests and shared:
        record_pass(runtime, ref, task, scope, context, payload, memo)
    runtime.charge(task, payload)
    runtime.observe(task, ref.phase, scope, outcome)
    if task.settings.cache and ref.run.checkpoints.refreshes_shared(task, ref.phase):
        await refresh_shared(runtime, ref, task, context, scope, payload, memo)
    if runtime.artifact_level == "all":
        await runtime.publish(task, ref.phase, label, outcome, payload)
    return payload


def checkpoint_key(
    runtime: PassRuntime,
    ref: LeafRef,
    task: Task,
    context: Mapping[str, Any],
    scope: Sequence[int] | None,
    *,
    shared: bool,
    memo: KeyMemo | None = None,
) -> str:
    """The key of a pass's checkpoint: the content key of ``compile.cache``, plus the run's
    lineage unless the task reuses checkpoints across runs (``shared`` forces the shared key;
    see ``compile.scope``). ``memo``: the keys already computed for this pass's input."""
    lineage = "" if shared else ref.run.checkpoints.salt(task, ref.phase)
    salt = runtime.salt(task) + lineage
    iteration = tuple(scope or ())
    slot = (ref.path, ref.phase, iteration, salt)
    found = memo.get(slot) if memo is not None else None
    if found is None:
        found = cache_key(
            task, runtime.identity(task), context, iteration=iteration, phase=ref.phase, salt=salt
        )
        if memo is not None:
            memo[slot] = found
    return found


async def refresh_shared(
    runtime: PassRuntime,
    ref: LeafRef,
    task: Task,
    context: Mapping[str, Any],
    scope: Sequence[int] | None,
    payload: Payload,
    memo: KeyMemo | None = None,
) -> None:
    """A fresh run's result also replaces the checkpoint later runs share (its own key is
    the run's lineage, so its retries and resume never read an older one)."""
    run_context = TaskRunContext.get()
    if run_context is None:
        return
    key = checkpoint_key(runtime, ref, task, context, scope, shared=True, memo=memo)
    ttl = ref.run.checkpoints.ttl(task)
    expiration = datetime.now(UTC) + timedelta(seconds=ttl) if ttl else None
    store, logger = run_context.result_store, get_run_logger()

    def write() -> None:
        try:
            store.write(payload, key=key, expiration=expiration)
        except Exception as exc:  # the run's own checkpoint is written; this one is a courtesy
            logger.warning("could not refresh the shared checkpoint %s: %s", key, exc)

    SIDE_WRITES.submit(write)


def record_pass(
    runtime: PassRuntime,
    ref: LeafRef,
    task: Task,
    scope: Sequence[int] | None,
    context: Mapping[str, Any],
    payload: Payload,
    memo: KeyMemo | None = None,
) -> None:
    """Write the pass's checkpoint manifest (what its key covered: the shared key), for
    ``folpipe plan``."""
    key = checkpoint_key(runtime, ref, task, context, scope, shared=True, memo=memo)
    parts = key_parts(task, context, phase=ref.phase, salt=runtime.salt(task))
    SIDE_WRITES.submit(  # the parts now: the context may change once the pass returns
        lambda: write_manifest(
            Path(runtime.spec.manifests or runtime.spec.root_dir),
            task,
            phase=ref.phase,
            iteration=tuple(scope or ()),
            key=key,
            parts=parts,
            delta=payload.get("delta") or {},
            seal=seal,
        )
    )


@dataclass(frozen=True)
class CheckpointKey:
    """The leaf's ``cache_key_fn``: :func:`checkpoint_key` of the pass (picklable)."""

    ref: LeafRef
    live: ProcessLocal

    def __call__(self, run_context: Any, params: Mapping[str, Any]) -> str:
        tag_task_run(run_context, self.ref.late_tags)  # a cached run never reaches the body
        runtime = runtime_of(self.ref, self.live)
        task = runtime.task(self.ref.path)
        boxed = params["context"]
        memo = boxed.keys if isinstance(boxed, ContextBox) else None
        scope = params.get("scope")
        return checkpoint_key(runtime, self.ref, task, unbox(boxed), scope, shared=False, memo=memo)


@dataclass(frozen=True)
class RetryCondition:
    """The leaf's ``retry_condition_fn``: never author errors; ``retry_on`` when declared."""

    retry_on: tuple[str, ...] | None

    def __call__(self, _task: Any, _task_run: Any, state: Any) -> bool:
        data = getattr(state, "data", None)
        exc = data if isinstance(data, BaseException) else None
        return should_retry(exc, self.retry_on) if exc is not None else self.retry_on is None


def task_options(
    task: Task,
    node: NodePlan,
    ref: LeafRef,
    live: ProcessLocal,
    *,
    tags: Sequence[str],
    storage: Any,
) -> dict[str, Any]:
    """Every Prefect option of a leaf task: one place for retries, timeout, tags, checkpoints."""
    settings = task.settings
    options: dict[str, Any] = {
        "name": task.name if ref.phase == "single" else f"{task.name} ({ref.phase} pass)",
        "task_run_name": "{label}",
        "description": f"folder task {task.path}",
        "retries": settings.max_retries,
        "retry_delay_seconds": prefect_retry_delay(settings),
        "retry_condition_fn": RetryCondition(retry_on_of(task)),
        "timeout_seconds": node.timeout,
        "tags": list(tags),
    }
    if not settings.cache:
        return options | {"cache_policy": NO_CACHE, "persist_result": False}
    options |= {
        "cache_key_fn": CheckpointKey(ref, live),
        "result_storage": checkpoint_storage(storage),
        "result_serializer": SERIALIZER,
        "persist_result": True,
    }
    ttl = ref.run.checkpoints.ttl(task)
    if ttl and ref.run.checkpoints.across(task, ref.phase):
        options["cache_expiration"] = timedelta(seconds=ttl)
    return options


def leaf_task(
    ref: LeafRef, live: ProcessLocal, options: Mapping[str, Any]
) -> PrefectTask[..., Any]:
    """The Prefect task of one pass. Its function is a ``partial`` of :func:`run_leaf`: for a
    plain function Prefect reads and hashes its source on every ``Task()``."""
    options = dict(options)
    storage = options.pop("result_storage", None)
    built = PrefectTask(partial(run_leaf, ref, live), **options)
    # set after construction: Prefect's constructor accepts only saved blocks (or a path),
    # and the guarded checkpoint folder is a block made for this run
    built.result_storage = storage
    built.task_key = f"folpipe_{slug(ref.path or 'root', limit=40)}-{ref.phase}"
    return built
