"""Public API: ``folder_to_flow`` and ``run_workflow`` (docs/running.md)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefect import Flow
from prefect.context import FlowRunContext
from prefect.states import Failed
from prefect.utilities.asyncutils import run_coro_as_sync

from .. import telemetry
from ..errors import ConfigError, InfrastructureError, WorkflowFailed
from ..plan import Plan, build_plan
from ..plan.contextops import describe_error
from ..workflow.config import TaskConfig
from ..workflow.tree import Workflow
from .build import check_run_sdks, preflight, run_root
from .checkpoints import flow_result_storage
from .infra import ensure_api, guard_temporary_server, infrastructure_error, run_clients
from .leaf import ProcessLocal
from .options import RunOptions
from .report import RunResult, RunTracker, reported_tasks
from .runner import Runners
from .signature import complete_call, merge_inputs, with_input_signature
from .tasks import flow_name

LOG = logging.getLogger("prefect_folpipe.compile")


class WorkflowFlow(Flow[..., Any]):
    """An async Prefect flow that can also be called synchronously.

    Outside a running event loop, calling it runs the flow to completion and returns the
    final context; inside one it returns an awaitable, like any async flow.
    """

    root_config: TaskConfig | None = None
    """The root task's config: its declared inputs are the flow's parameters."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.root_config is not None:
            complete_call(self.root_config, args, kwargs)
        top_level = FlowRunContext.get() is None
        if top_level:  # its API first (FP523)
            ensure_api()
        result = super().__call__(*args, **kwargs)
        if asyncio.iscoroutine(result) and top_level:
            result = _with_run_clients(result)
        if asyncio.iscoroutine(result) and not _loop_running():
            return run_coro_as_sync(result)
        return result

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """The run's parameters as the API stores them. A plain JSON value (the context) is
        copied as it is; anything else goes through Prefect's own encoder, which imports
        FastAPI (a tenth of a second of a new process) to give a plain value the same copy."""
        serialized: dict[str, Any] = {}
        others: dict[str, Any] = {}
        for key, value in parameters.items():
            try:
                serialized[key] = _json_copy(value)
            except (_NotPlain, RecursionError):
                others[key] = value
        if others:
            serialized.update(super().serialize_parameters(others))
        return {key: serialized[key] for key in parameters if key in serialized}


class _NotPlain(Exception):
    """A value Prefect's encoder may change (a model, an enum, a ``_sa`` key...)."""


_SCALARS = (str, int, float, bool, type(None))


def _json_copy(value: Any) -> Any:
    """A copy of plain JSON data, as FastAPI's ``jsonable_encoder`` makes it; raises
    ``_NotPlain`` for anything else."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        return [_json_copy(item) for item in value]
    if kind is dict:
        copy: dict[Any, Any] = {}
        for key, item in value.items():
            if type(key) not in _SCALARS or (type(key) is str and key.startswith("_sa")):
                raise _NotPlain
            copy[key] = _json_copy(item)
        return copy
    raise _NotPlain


async def _with_run_clients(run: Any) -> Any:
    """``run`` (a top-level flow run's coroutine) with the clients a ``run_workflow`` gets
    (``infra.run_clients``: quick retries toward a local server, no CA bundle over http)."""
    async with run_clients():
        return await run


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def load(path: str | Path) -> Workflow:
    """Load and validate a workflow folder (raises ``WorkflowValidationError``)."""
    from ..validate import load_workflow

    return load_workflow(Path(path))


def flow_return(workflow: Workflow, result: RunResult) -> Any:
    """What a flow body returns: the final context, or a Failed state for a failed run (a
    state rather than a raise, so the run fails without a traceback in its logs)."""
    if result.status != "failed":
        return result.context
    reason = describe_error(result.error) if result.error else "a task failed"
    message = f"workflow '{workflow.name}' failed: {reason}"
    return Failed(message=message, data=WorkflowFailed(message, result))


def make_flow(
    workflow: Workflow,
    options: RunOptions,
    sink: list[RunResult] | None = None,
    plan: Plan | None = None,
) -> WorkflowFlow:
    """The Prefect flow running ``workflow``: parameter ``context``, returns the final context.

    The flow function holds the workflow, its plan and the options in a ``ProcessLocal`` box:
    a Dask task runner pickles the flow with every submission, and they stay in this process.
    Given a ``plan``, its runners were checked already (``preflight``).
    """
    if plan is None:
        plan = build_plan(workflow)
        Runners(plan).check()  # FP640 / FP607 now rather than at the first leaf
    telemetry.prepare()  # exporting before Prefect starts the flow run's own span
    live = ProcessLocal((workflow, plan, options, sink))

    async def folpipe_workflow(
        context: dict[str, Any] | None = None, **inputs: Any
    ) -> dict[str, Any]:
        return await _flow_body(live, context, inputs)  # type: ignore[no-any-return]

    with_input_signature(folpipe_workflow, workflow.root.config)  # root inputs = UI form
    flow = WorkflowFlow(
        folpipe_workflow,
        name=flow_name(workflow.name),
        description=workflow.root.config.description,
        validate_parameters=False,
        persist_result=False,
        result_storage=flow_result_storage(options.storage_for(workflow.root_dir)),
    )
    flow.root_config = workflow.root.config
    return flow


async def _flow_body(live: ProcessLocal, context: dict[str, Any] | None, inputs: dict) -> Any:
    workflow, plan, options, sink = live.value
    options = with_run_parameters(options, inputs)
    context = merge_inputs(context, inputs) if inputs else context
    result = await run_root(workflow, context, options, plan=plan)  # it keeps the run record
    if sink is not None:
        sink.append(result)
    return flow_return(workflow, result)


def with_run_parameters(options: RunOptions, parameters: dict[str, Any]) -> RunOptions:
    """``options`` with the run's ``fresh`` / ``reuse_checkpoints`` parameters (popped from
    ``parameters``) applied."""
    fresh = bool(parameters.pop("fresh", False))
    reuse = parameters.pop("reuse_checkpoints", None)
    rerun = rerun_parameters(
        parameters.pop("rerun_from", None), parameters.pop("restore_from", None)
    )
    if not fresh and reuse is None and not rerun:
        return options
    return replace(
        options,
        fresh=options.fresh or fresh,
        across_runs=options.across_runs if reuse is None else bool(reuse),
        **rerun,
    )


def rerun_parameters(rerun_from: Any, restore_from: Any) -> dict[str, Any]:
    """``RunOptions`` fields of the ``rerun_from`` / ``restore_from`` run parameters."""
    fields: dict[str, Any] = {}
    if rerun_from:
        names = [rerun_from] if isinstance(rerun_from, str) else list(rerun_from)
        fields["rerun_from"] = tuple(str(name) for name in names)
    if restore_from:
        fields["lineage"] = str(restore_from)
    return fields


def not_run(
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    error: BaseException,
    plan: Plan | None = None,
) -> RunResult:
    """The report of a run that never started (every task ``skipped``, ``error`` says why)."""
    tracker = RunTracker(reported_tasks(plan or build_plan(workflow)))
    rows = tracker.rows()
    for row in rows:
        row["error"] = row["error"] or f"not run: {error}"
    return RunResult("failed", dict(context or {}), rows, workflow=workflow.name, error=error)


def missing_sdk_result(
    workflow: Workflow, context: Mapping[str, Any] | None, options: RunOptions
) -> RunResult | None:
    """The failed report of a run refused for a missing SDK (FP321), before any server
    starts; ``None`` when every SDK the run needs can be imported."""
    try:
        check_run_sdks(workflow, options)
    except ConfigError as exc:
        return RunResult("failed", dict(context or {}), [], workflow=workflow.name, error=exc)
    return None


def folder_to_flow(
    path: str | Path,
    *,
    provider: str | None = None,
    replies: str | Path | None = None,
    fresh: bool = False,
) -> WorkflowFlow:
    """Translate a workflow folder into a Prefect flow.

    The flow's only parameter is ``context: dict | None = None``; calling it (sync, or
    ``await`` inside async code) runs the workflow and returns the final context as a plain
    dict. A failed workflow raises ``WorkflowFailed`` (its ``.result`` is the ``RunResult``).
    """
    options = RunOptions(provider=provider, replies=replies, fresh=fresh)
    return make_flow(load(path), options)


async def arun_workflow(
    path: str | Path | Workflow,
    context: Mapping[str, Any] | None = None,
    *,
    options: RunOptions | None = None,
    **kwargs: Any,
) -> RunResult:
    """Async ``run_workflow``; ``kwargs`` are ``RunOptions`` fields (provider, replies, fresh)."""
    options = options or RunOptions(**kwargs)
    workflow = path if isinstance(path, Workflow) else load(path)
    plan = build_plan(workflow)  # once per run: preflight, the flow and the run all read it
    try:
        await preflight(workflow, options, plan)
    except ConfigError as exc:
        return RunResult("failed", dict(context or {}), [], workflow=workflow.name, error=exc)
    if FlowRunContext.get() is None:
        try:
            await asyncio.to_thread(ensure_api)
        except InfrastructureError as exc:  # FP523: the temporary server did not start
            return not_run(workflow, context, exc, plan)
    sink: list[RunResult] = []
    flow = make_flow(workflow, options, sink, plan)
    guard_temporary_server()
    try:
        # a top-level call: quick retries toward a local server (WorkflowFlow.__call__)
        state = await flow(context=dict(context or {}), return_state=True)
    except Exception as exc:  # the Prefect API failed: a coded error, not a traceback
        failure = infrastructure_error(exc)
        if failure is None:
            raise
        if sink:  # the run itself ended; Prefect could not record its end
            LOG.warning("the run ended, but Prefect could not record it: %s", failure)
            return sink[-1]
        return not_run(workflow, context, failure, plan)
    if sink:
        return sink[-1]
    error = await state.aresult(raise_on_failure=False)
    if isinstance(error, WorkflowFailed) and isinstance(error.result, RunResult):
        return error.result
    exc = error if isinstance(error, BaseException) else None
    return RunResult("failed", dict(context or {}), [], workflow=workflow.name, error=exc)


def run_workflow(
    path: str | Path | Workflow,
    context: Mapping[str, Any] | None = None,
    *,
    provider: str | None = None,
    replies: str | Path | None = None,
    fresh: bool = False,
    options: RunOptions | None = None,
    rerun_from: str | list[str] | tuple[str, ...] = (),
) -> RunResult:
    """Run a workflow folder to completion and return its ``RunResult`` (never raises for a
    failed task: check ``.status``; invalid folders raise ``WorkflowValidationError``).
    ``rerun_from``: task names or paths asked again with what runs after them, the rest
    restored from checkpoints (``folpipe run --from``)."""
    options = options or RunOptions(provider=provider, replies=replies, fresh=fresh)
    if rerun_from:
        names = (rerun_from,) if isinstance(rerun_from, str) else tuple(rerun_from)
        options = replace(options, rerun_from=names)
    coro = arun_workflow(path, context, options=options)
    if _loop_running():
        raise RuntimeError("run_workflow() is synchronous; use `await arun_workflow(...)`")
    return asyncio.run(coro)
