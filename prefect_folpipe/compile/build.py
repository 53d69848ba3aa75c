"""Build and run Prefect tasks/subflows for a loaded workflow (the translator's core).

``run_root(workflow, context, options)`` executes a workflow inside an *existing* flow body:
leaves become async Prefect task runs (named by task path, ``path[i]`` in loops) with retries,
timeouts and content-keyed checkpoints; branches become a parent task run with nested task runs
(``settings.branch_as: task``, the default) or a subflow run (``branch_as: subflow``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from importlib import import_module
from typing import Any

from prefect import Flow
from prefect import Task as PrefectTask
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging import get_run_logger

from ..errors import ConfigError, FolpipeError, ProviderError
from ..workflow.context import answer_delta
from ..workflow.tree import Task, Workflow
from . import artifacts
from .background import END_HOLD_S, WRITER
from .cache import cache_key, slug, task_identity
from .contextops import (
    ContextBox,
    child_context,
    describe_error,
    error_entry,
    merge_delta,
    plain,
    seed_context,
    unbox,
)
from .failures import ResultNotSerializable, TaskTimedOut
from .groups import NodeResult, Scope, run_group
from .options import RunOptions
from .report import RunResult, RunTracker, reported_tasks
from .retry import retry_delays, retry_on_of, should_retry
from .tags import TagPlan, limited_tags, tag_task_run

LOG = logging.getLogger("prefect_folpipe.compile")
DEFAULT_BRANCH_AS = "task"
FLOW_NAME_FORBIDDEN = str.maketrans({c: "-" for c in "/%&><"})


def flow_name(text: str) -> str:
    """A Prefect flow name (no ``/ % & > <``)."""
    return text.translate(FLOW_NAME_FORBIDDEN).strip() or "folpipe"


def _optional(module: str, attr: str) -> Any:
    """An attribute of a module other engineers may not have committed yet (else ``None``)."""
    try:
        return getattr(import_module(module), attr)
    except (ImportError, AttributeError):
        return None


@dataclass
class _Pass:
    """One agent pass as the orchestrator sees it."""

    status: str
    delta: dict[str, Any]
    error: BaseException | None = None
    handle: Any = None


class WorkflowRun:
    """Everything one run shares: provider pool, ledger, tracker, built Prefect tasks.

    It is the ``groups.Executor`` the execution strategies call back into.
    """

    def __init__(self, workflow: Workflow, options: RunOptions) -> None:
        from ..providers.registry import ProviderOverride, ProviderPool, override_from_env

        self.workflow = workflow
        self.options = options
        self.runner = options.runner or import_module("prefect_folpipe.agent").run_task
        self.tracker = RunTracker(reported_tasks(workflow.root), options.listeners)
        self.storage = options.storage_for(workflow.root_dir)
        self.artifact_level = options.artifact_level()
        override = None
        if options.provider or options.replies:
            override = ProviderOverride(options.provider or "scripted", options.replies)
        else:
            override = override_from_env()
        self.override = override
        self.pool = ProviderPool(
            workflow,
            override,
            secret_resolver=_optional("prefect_folpipe.compile.secrets", "prefect_secret_resolver"),
            call_guard=self._call_guard(),
            record=options.record,
        )
        ledger_cls = _optional("prefect_folpipe.agent.budget", "BudgetLedger")
        self.ledger = ledger_cls(workflow) if ledger_cls is not None else None
        self.warnings: list[str] = []
        self._identities: dict[str, str] = {}
        self._leaves: dict[tuple[str, str], PrefectTask[..., Any]] = {}
        self._branches: dict[str, Any] = {}
        self._conditions: dict[str, Any] = {}
        self.tag_plan = TagPlan()

    # -- set-up ---------------------------------------------------------------------------

    def _call_guard(self) -> Any:
        factory = _optional("prefect_folpipe.compile.ratelimit", "make_call_guard")
        return factory(self.workflow) if factory is not None else None

    def salt(self, task: Task) -> str:
        """Who answers the task: the effective provider type (an override changes it) and a
        hash of the scripted replies / cassette turns answering it (issue 11 point 8)."""
        return self.pool.checkpoint_salt(task)

    def identity(self, task: Task) -> str:
        value = self._identities.get(task.path)
        if value is None:
            value = self._identities[task.path] = task_identity(task)
        return value

    def tags_for(self, task: Task | None = None) -> list[str]:
        """``folpipe``, ``workflow:<name>``, ``provider:<p>``, ``model:<m>`` + settings tags."""
        tags = ["folpipe", f"workflow:{self.workflow.name}"]
        if task is None:  # the flow run: every provider and model the workflow uses
            for node in self.workflow.tasks():
                tags += [
                    t for t in self.tags_for(node)[2:] if t.startswith(("provider:", "model:"))
                ]
            return list(dict.fromkeys(tags))
        provider, model = self._provider_of(task)
        if task.runs_agent and provider:
            tags.append(f"provider:{provider}")
        if task.runs_agent and model:
            tags.append(f"model:{model}")
        tags += [*task.settings.tags, *task.config.tags]
        return list(dict.fromkeys(tags))

    def task_run_tags(self, task: Task, *extra: str) -> list[str]:
        """Tags of a task run: all of ``tags_for`` (the default) or, with task tags turned
        off, only for tasks declaring their own tags."""
        if self.options.task_tags_enabled() or task.settings.tags or task.config.tags:
            return [*self.tags_for(task), *extra]
        return []

    def creation_tags(self, task: Task, *extra: str) -> list[str]:
        """The tags a task run is created with (none when no tag has a concurrency limit;
        ``late_tags`` then go on as it starts: see ``tags``)."""
        return self.tag_plan.at_creation(_tag_key(task, extra), self.task_run_tags(task, *extra))

    def late_tags(self, task: Task, *extra: str) -> list[str]:
        return self.tag_plan.late(_tag_key(task, extra))

    def _provider_of(self, task: Task) -> tuple[str | None, str | None]:
        if self.override is not None:
            from ..providers.registry import canonical_type

            return canonical_type(self.override.name), None
        if task.provider is None:
            return None, None
        return task.provider.type, task.provider.model

    # -- Prefect objects ------------------------------------------------------------------

    def leaf_task(self, task: Task, phase: str) -> PrefectTask[..., Any]:
        """The Prefect task running one agent pass of ``task`` (built once per run)."""
        key = (task.path, phase)
        built = self._leaves.get(key)
        if built is None:
            built = self._leaves[key] = self._build_leaf(task, phase)
        return built

    def _build_leaf(self, task: Task, phase: str) -> PrefectTask[..., Any]:
        settings = task.settings
        retry_on = retry_on_of(task)
        timeout = settings.timeout if settings.timeout and settings.timeout > 0 else None
        creation = self.creation_tags(task)
        late = self.late_tags(task)
        options: dict[str, Any] = {
            "name": f"{task.name}" if phase == "single" else f"{task.name} ({phase} pass)",
            "task_run_name": "{label}",
            "retries": settings.max_retries,
            "retry_delay_seconds": retry_delays(settings) or 0,
            "retry_condition_fn": _retry_condition(retry_on),
            "timeout_seconds": timeout,
            "tags": creation,
        }
        if settings.cache:
            identity = self.identity(task)

            def key_fn(run_context: Any, params: Mapping[str, Any]) -> str:
                tag_task_run(run_context, late)  # a cached run never reaches the body
                return cache_key(
                    task,
                    identity,
                    unbox(params["context"]),
                    iteration=tuple(params.get("scope") or ()),
                    phase=phase,
                    salt=self.salt(task),
                )

            options |= {
                "cache_key_fn": key_fn,
                "result_storage": self.storage,
                "persist_result": True,
                "refresh_cache": True if self.options.fresh else None,
            }
            if settings.cache_expiration:
                options["cache_expiration"] = timedelta(seconds=settings.cache_expiration)
        else:
            options |= {"cache_policy": NO_CACHE, "persist_result": False}
        built = PrefectTask(
            self._leaf_body(task, phase), description=f"folder task {task.path}", **options
        )
        built.task_key = f"folpipe_{slug(task.path or 'root', limit=40)}-{phase}"
        return built

    def _leaf_body(self, task: Task, phase: str) -> Any:
        """``run_folder_task(context, label, scope)`` bound to this task: a ``partial``, since
        for a function Prefect looks up and hashes its source on every ``Task()`` (about
        0.3 ms, a tenth of a bare task run)."""
        return partial(run_folder_task, self, task, phase)

    async def execute_leaf(
        self,
        task: Task,
        phase: str,
        context: dict[str, Any],
        label: str,
        scope: list[int] | None,
    ) -> dict[str, Any]:
        """The body of a leaf task run: one agent pass, checked and reported."""
        WRITER.touch()
        task_run = TaskRunContext.get()
        tag_task_run(task_run, self.late_tags(task))
        self.tracker.attempt(task.path, task_run.task_run.run_count if task_run else 1)
        logger = get_run_logger()
        provider = self.pool.for_task(task) if task.runs_agent else None
        outcome = await self.runner(
            task,
            self.workflow,
            context,
            provider=provider,
            phase=phase,
            iteration=scope[-1] if scope else None,
            logger=logger,
            ledger=self.ledger,
        )
        WRITER.touch()
        payload = _payload(outcome)
        _check_serialisable(task, payload)
        self.tracker.charge(task.path, payload)
        if self.artifact_level == "all":
            self.publish_task_artifact(task, phase, label, outcome, payload)
        return payload

    def publish_task_artifact(
        self, task: Task, phase: str, label: str, outcome: Any, payload: dict[str, Any]
    ) -> None:
        """Queue the task's markdown artifact (written in the background; see ``background``)."""
        view = {**payload, "prompt": getattr(outcome, "prompt", "")}
        view["tool_log"] = list(getattr(outcome, "tool_log", []) or [])
        key = artifacts.task_artifact_key(self.workflow.name, task, phase)
        task_run = TaskRunContext.get()
        run_id = task_run.task_run.id if task_run else None
        artifacts.submit_task_artifact(
            key, lambda: artifacts.render_task(task, label, view), f"folpipe task {label}", run_id
        )

    def branch_runner(self, task: Task) -> Any:
        """The parent task (``branch_as: task``) or subflow running a branch's children."""
        built = self._branches.get(task.path)
        if built is not None:
            return built

        async def run_folder_branch(context: Any, label: str, scope: list | None = None) -> dict:
            tag_task_run(TaskRunContext.get(), self.late_tags(task, "branch"))
            return await self.execute_branch(task, unbox(context), scope)

        run_folder_branch.__name__ = f"folpipe_branch_{slug(task.path, limit=40)}"
        if self.branch_mode(task) == "subflow":
            built = Flow(
                run_folder_branch,
                name=flow_name(f"{self.workflow.name}.{task.path.replace('/', '.')}"),
                flow_run_name="{label}",
                validate_parameters=False,
            )
        else:
            built = PrefectTask(
                run_folder_branch,
                name=f"{task.name} (branch)",
                task_run_name="{label}",
                cache_policy=NO_CACHE,
                persist_result=False,
                tags=self.creation_tags(task, "branch"),
            )
        self._branches[task.path] = built
        return built

    async def execute_branch(
        self, task: Task, context: dict[str, Any], scope: list[int] | None
    ) -> dict[str, Any]:
        """The body of a branch run (task or subflow): raises when the branch failed."""
        outcome = await self.run_branch(task, context, Scope(tuple(scope or ())))
        if outcome.status == "failed":
            raise outcome.error or FolpipeError(f"branch '{task.path}' failed")
        return {"status": outcome.status, "delta": outcome.delta}

    @staticmethod
    def branch_mode(task: Task) -> str:
        return task.settings.branch_as or DEFAULT_BRANCH_AS

    # -- execution ------------------------------------------------------------------------

    async def agent_pass(
        self, task: Task, phase: str, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> _Pass:
        """Run one agent pass as a Prefect task run; report cached/completed/failed."""
        if task.settings.task_runner == "dask":
            return await self._dask_pass(task, phase, context, scope)
        state = await self.leaf_task(task, phase)(
            context=ContextBox(context),
            label=scope.label(task.path) + ("" if phase == "single" else f" ({phase} pass)"),
            scope=list(scope.iteration),
            wait_for=list(wait_for) or None,
            return_state=True,
        )
        return await self._settle_pass(task, state)

    async def _dask_pass(
        self, task: Task, phase: str, context: dict[str, Any], scope: Scope
    ) -> _Pass:
        """``settings.task_runner: dask``: submit the pass to the flow's Dask task runner (the
        leaf runs in a worker process, rebuilt from plain data by ``deploy.dask``)."""
        from ..deploy.dask import run_on_dask

        replies = str(self.options.replies) if self.options.replies else None
        provider = self.options.provider or ("scripted" if replies else None)
        state = await run_on_dask(
            task,
            self.workflow.root_dir,
            context,
            phase=phase,
            provider=provider,
            replies=replies,
            label=scope.label(task.path),
        )
        self.tracker.attempt(task.path, 1)
        if state.is_completed() and state.name != "Cached":
            pid = (await state.aresult()).get("worker_pid")
            _run_logger().info("%s ran in Dask worker process %s", task.path, pid)
        return await self._settle_pass(task, state, charge=True)

    async def _settle_pass(self, task: Task, state: Any, *, charge: bool = False) -> _Pass:
        """A pass's final Prefect state as cached / completed / failed (with its error)."""
        if state.is_completed():
            payload = await state.aresult()
            status = "cached" if state.name == "Cached" else "completed"
            if charge and status == "completed":
                self.tracker.charge(task.path, payload)
            return _Pass(status, dict(payload.get("delta") or {}), None, state)
        error = await state.aresult(raise_on_failure=False)
        if not isinstance(error, BaseException):
            error = FolpipeError(state.message or f"task '{task.path}' {state.name}")
        if state.name == "TimedOut":
            error = TaskTimedOut(
                f"task '{task.path}' exceeded settings.timeout={task.settings.timeout}s"
            )
        return _Pass("failed", {}, error, state)

    async def run_branch(self, task: Task, context: dict[str, Any], scope: Scope) -> _Pass:
        """First agent pass (if any), the children, then the final pass whose answer wins."""
        ctx = child_context(context)
        delta: dict[str, Any] = {}
        statuses: list[str] = []
        has_first = task.runs_agent or "pre_run" in task.hooks
        has_final = task.runs_agent or "post_run" in task.hooks
        if has_first:
            first = await self.agent_pass(task, "first", ctx, scope, ())
            if first.status == "failed":
                return first
            statuses.append(first.status)
            merge_delta(ctx, first.delta)
            merge_delta(delta, first.delta)
        group = await run_group(task, ctx, self, scope)
        merge_delta(ctx, group.delta)
        merge_delta(delta, group.delta)
        if group.iterations is not None:
            record = self.tracker.records[task.path]
            record.iterations = (record.iterations or 0) + group.iterations
        if group.status == "failed":
            return _Pass("failed", delta, group.error)
        if has_final:
            final = await self.agent_pass(task, "final", ctx, scope, ())
            if final.status == "failed":
                return final
            statuses.append(final.status)
            merge_delta(delta, final.delta)
        status = "cached" if self._all_cached(task, statuses) else "completed"
        return _Pass(status, delta)

    def _all_cached(self, task: Task, own: Sequence[str]) -> bool:
        if any(status != "cached" for status in own):
            return False
        seen = [
            self.tracker.records[node.path].executions
            for node in task.walk()
            if node.path != task.path and not node.children
        ]
        flat = [status for executions in seen for status in executions]
        return bool(flat) and all(status in ("cached", "skipped") for status in flat)

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> NodeResult:
        """Run one child (leaf pass or branch), then apply its ``on_failure``."""
        self.tracker.start(child.path, scope.innermost)
        if scope.iteration and not (child.children and child.execution_type == "loop"):
            self.tracker.count_iteration(child.path)
        try:
            skip = self._should_skip(child, context)
            if skip:
                self.tracker.skip_tree(child, None)
                return NodeResult("skipped")
            if child.children:
                outcome = await self._call_branch(child, context, scope, wait_for)
            else:
                outcome = await self.agent_pass(child, "single", context, scope, wait_for)
        except asyncio.CancelledError:
            self.tracker.finish(
                child.path, "failed", error="cancelled (a sibling failed or a timeout expired)"
            )
            raise
        except Exception as exc:  # e.g. a skip_if that cannot be evaluated
            outcome = _Pass("failed", {}, exc)
        error_text = describe_error(outcome.error) if outcome.error else None
        self.tracker.finish(child.path, outcome.status, error=error_text)  # type: ignore[arg-type]
        result = NodeResult(outcome.status, outcome.delta, outcome.error, handle=outcome.handle)  # type: ignore[arg-type]
        return self._apply_on_failure(child, result, scope)

    async def _call_branch(
        self, task: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> _Pass:
        runner = self.branch_runner(task)
        call = {
            # a subflow shows its input context as a parameter; a task gets it boxed
            "context": context if self.branch_mode(task) == "subflow" else ContextBox(context),
            "label": scope.label(task.path),
            "scope": list(scope.iteration),
            "return_state": True,
        }
        if wait_for:
            call["wait_for"] = list(wait_for)
        state = await runner(**call)
        if state.is_completed():
            value = await state.aresult()
            return _Pass(value["status"], dict(value["delta"]), None, state)
        error = await state.aresult(raise_on_failure=False)
        if not isinstance(error, BaseException):
            error = FolpipeError(state.message or f"branch '{task.path}' {state.name}")
        return _Pass("failed", {}, error, state)

    def _should_skip(self, task: Task, context: Mapping[str, Any]) -> bool:
        expression = task.config.conditions.skip_if
        if expression is None:
            return False
        condition = self._conditions.get(task.path)
        if condition is None:
            from ..expressions import compile_condition

            condition = self._conditions[task.path] = compile_condition(expression)
        return bool(condition.evaluate(context))

    def _apply_on_failure(self, task: Task, result: NodeResult, scope: Scope) -> NodeResult:
        """Task-level ``on_failure`` (skip | use_default) before the group's ``on_error``."""
        mode = task.config.on_failure
        if result.status != "failed" or mode == "fail":
            return result
        entry = error_entry(task, result.error or "failed", scope.innermost)
        delta: dict[str, Any] = {}
        if mode == "use_default":
            delta = answer_delta(task, task.config.default_output or {})
        delta["_errors"] = [entry]
        return NodeResult("failed", delta, result.error, handled=True, handle=result.handle)

    def not_run(self, child: Task, reason: str) -> None:
        if self.tracker.records[child.path].status == "failed":
            return  # cancelled while running: it already reports why
        self.tracker.skip_tree(child, reason)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        _run_logger().warning(message)

    def iteration_started(self, group: Task, number: int) -> None:
        record = self.tracker.records[group.path]
        record.current_iteration = number
        self.tracker._emit("iteration", record)

    async def aclose(self) -> None:
        await self.pool.aclose()


async def run_folder_task(
    run: WorkflowRun,
    task: Task,
    phase: str,
    context: Any,
    label: str,
    scope: list | None = None,
) -> dict:
    """The function of a leaf's Prefect task (bound to its run, task and phase)."""
    return await run.execute_leaf(task, phase, unbox(context), label, scope)


def _tag_key(task: Task, extra: Sequence[str]) -> str:
    """Which of a task's Prefect tasks (its passes, or its branch run with ``extra``)."""
    return task.path + "|" + ",".join(extra)


async def _limited_tags(run: WorkflowRun) -> frozenset[str] | None:
    if not any(run.task_run_tags(task) for task in run.workflow.tasks()):
        return frozenset()
    return await limited_tags()


def _run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    try:
        return get_run_logger()
    except Exception:
        return LOG


def _retry_condition(retry_on: Sequence[str] | None) -> Any:
    def retry_condition(_task: Any, _task_run: Any, state: Any) -> bool:
        data = getattr(state, "data", None)
        exc = data if isinstance(data, BaseException) else None
        return should_retry(exc, retry_on) if exc is not None else retry_on is None

    return retry_condition


def _payload(outcome: Any) -> dict[str, Any]:
    """The checkpointed part of a TaskOutcome (plain data)."""
    usage = getattr(outcome, "usage", None)
    return {
        "delta": dict(outcome.delta),
        "text": getattr(outcome, "text", ""),
        "usage": usage.to_dict() if hasattr(usage, "to_dict") else dict(usage or {}),
        "model_calls": getattr(outcome, "model_calls", 0),
        "tool_calls": getattr(outcome, "tool_calls", 0),
        "cost": getattr(outcome, "cost", 0.0),
        "provider": getattr(outcome, "provider", None),
        "model": getattr(outcome, "model", None),
    }


def _check_serialisable(task: Task, payload: dict[str, Any]) -> None:
    import json

    try:
        json.dumps(payload)
    except (TypeError, ValueError) as exc:
        raise ResultNotSerializable(
            f"task '{task.path}' produced an output that cannot be checkpointed as JSON: {exc}"
        ) from None


async def _tag_flow_run(tags: Sequence[str]) -> str | None:
    """Add the workflow's tags to the current flow run; returns its id."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return None
    flow_run = context.flow_run
    missing = [tag for tag in tags if tag not in (flow_run.tags or [])]
    if missing:
        try:
            from prefect.client.orchestration import get_client

            async with get_client() as client:
                await client.update_flow_run(flow_run.id, tags=[*(flow_run.tags or []), *missing])
        except Exception as exc:  # tags are cosmetic; never fail a run for them
            LOG.debug("could not tag flow run: %s", exc)
    return str(flow_run.id)


async def _preflight(run: WorkflowRun, tasks: Sequence[Task]) -> None:
    """Resolve every agent task's provider up front: config mistakes fail before any call.

    A task with tools also asks its provider whether the model can call tools
    (``check_capabilities``, e.g. Ollama models without tool support fail here, FP323).
    """
    for task in tasks:
        if task.runs_agent:
            provider = run.pool.for_task(task)
            check = getattr(provider, "check_capabilities", None)
            if check is not None and any(tool.executable for tool in task.tools):
                try:
                    await check(task)
                except ProviderError:  # server unreachable now: the model call will report it
                    continue


async def preflight(workflow: Workflow, options: RunOptions) -> None:
    """Raise ``ConfigError`` before a flow run exists when a provider cannot be built."""
    run = WorkflowRun(workflow, options)
    try:
        target = workflow.find(options.only) if options.only else workflow.root
        await _preflight(run, list(target.walk()))
    finally:
        await run.pool.aclose()


async def run_root(
    workflow: Workflow, context: Mapping[str, Any] | None, options: RunOptions | None = None
) -> RunResult:
    """Execute ``workflow`` inside the current (existing) flow run and report it.

    Seeds the context (root ``context:`` + ``context``), runs the root task (or only
    ``options.only``), writes the summary artifact and returns a ``RunResult``; it never
    raises for task failures (``RunResult.status == "failed"``, ``.error``).
    """
    options = options or RunOptions()
    WRITER.touch()
    run = WorkflowRun(workflow, options)
    flow_run_id, run.tag_plan.limited = await asyncio.gather(
        _tag_flow_run(run.tags_for()), _limited_tags(run)
    )
    target = workflow.find(options.only) if options.only else workflow.root
    seeded = seed_context(workflow, context)
    started = time.monotonic()
    try:
        await _preflight(run, list(target.walk()))
        outcome = await _run_target(run, target, seeded)
    except ConfigError as exc:
        outcome = _Pass("failed", {}, exc)
    finally:
        await run.aclose()
    final = child_context(seeded)
    merge_delta(final, outcome.delta)
    _count_failed_attempts(run)
    rows = [row for row in run.tracker.rows() if _in_scope(row["path"], target.path)]
    result = RunResult(
        status="failed" if outcome.status == "failed" else "completed",
        context=plain(final),
        tasks=rows,
        flow_run_id=flow_run_id,
        workflow=workflow.name,
        error=outcome.error,
    )
    if run.artifact_level != "none":
        _summary(run, result, time.monotonic() - started)
    WRITER.touch(END_HOLD_S)  # the flow run is about to end: reports wait for that
    return result


def _count_failed_attempts(run: WorkflowRun) -> None:
    """Model calls and tokens of failed attempts (a retried or failed task) into the report.

    The tracker charges each *successful* pass's usage; the budget ledger saw every call this
    process made, so a task's report is the larger of the two (passes run on Dask workers
    are only in the tracker)."""
    if run.ledger is None:
        return
    for path, totals in run.ledger.report().items():
        record = run.tracker.records.get(path)
        if record is None:
            continue
        record.model_calls = max(record.model_calls, totals["model_calls"])
        record.input_tokens = max(record.input_tokens, totals["input_tokens"])
        record.output_tokens = max(record.output_tokens, totals["output_tokens"])


def _in_scope(path: str, root: str) -> bool:
    return not root or path == root or path.startswith(f"{root}/")


async def _run_target(run: WorkflowRun, target: Task, context: dict[str, Any]) -> _Pass:
    run.tracker.start(target.path)
    if target.children:
        outcome = await run.run_branch(target, context, Scope())
    else:
        outcome = await run.agent_pass(target, "single", context, Scope(), ())
    error = describe_error(outcome.error) if outcome.error else None
    run.tracker.finish(target.path, outcome.status, error=error)  # type: ignore[arg-type]
    return outcome


def _summary(run: WorkflowRun, result: RunResult, elapsed: float) -> None:
    key = slug(f"{run.workflow.name}-summary", limit=90)
    description = f"folpipe run of {run.workflow.name}: {result.status} in {elapsed:.1f}s"
    artifacts.submit_summary(key, result.tasks, description)
