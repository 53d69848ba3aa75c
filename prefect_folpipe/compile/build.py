"""Run a loaded workflow inside an existing flow run: the composition of one run.

``run_root(workflow, context, options)`` plans the workflow, builds the run's runtime (services,
tracker, tags, Prefect tasks, runners), runs the root task (or ``options.only``) through the
``TreeExecutor`` and reports a ``RunResult``. Leaves become async Prefect task runs (named by
task path, ``path[i]`` in loops) with retries, timeouts and content-keyed checkpoints;
branches a parent task run with nested task runs (``settings.branch_as: task``, the default)
or a subflow run (``branch_as: subflow``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from prefect.context import FlowRunContext

from .. import telemetry
from .._process.heap import older_objects_set_aside
from .._process.wording import noun
from ..agent import run_task
from ..errors import ConfigError, MissingInputError, ProviderError, RunInterrupted
from ..plan import CheckpointScope, Plan, build_plan
from ..plan.contextops import child_context, describe_error, merge_delta, plain, seed_context
from ..plan.execution import Outcome, is_signal
from ..workflow.names import slug
from ..workflow.sdks import check_sdks
from ..workflow.tree import Task, Workflow
from .approvals import ApprovalGates
from .checkpoints import Restorer, StoreEvents, checkpoint_locks, collecting, store_key
from .checkpoints import current as current_events
from .executor import LOG, LiveMode, TreeExecutor
from .history import keep_passes, record_fields, rerun_line, rerun_report
from .infra import (
    SETTLE,
    interruption,
    prefix_every_line,
    settle_crashed_runs,
    settle_earlier_attempt,
)
from .options import RunOptions
from .passes import FlowRuntime
from .report import (
    END_HOLD_S,
    WRITER,
    RunRecord,
    RunResult,
    RunTracker,
    artifacts,
    cost_report,
    read_record,
    reported_tasks,
    runs_dir,
)
from .rerun import prepare as prepare_rerun
from .rerun import quiet_passes
from .runner import Runners
from .shared import ModelServices, RunSpec, Services, override_of
from .sidewrites import SIDE_WRITES
from .tags import RunTags
from .tasks import PrefectTasks


class WorkflowRun:
    """One run's parts, wired together: plan, services, tracker, tags, tasks, runners."""

    def __init__(self, workflow: Workflow, options: RunOptions, plan: Plan | None = None) -> None:
        self.workflow = workflow
        self.options = options
        self.plan = plan or build_plan(workflow)
        scope = checkpoint_scope(options, quiet_passes(self.plan, workflow, options.rerun_from))
        self.spec = RunSpec.of(workflow, options, checkpoints=scope)
        self.local = ModelServices(workflow, self.spec)
        self.services: Services = self.local
        self.tracker = RunTracker(reported_tasks(self.plan), options.listeners)
        self.tags = RunTags(workflow, self.spec.override, task_tags=options.task_tags_enabled())
        self.runners = Runners(self.plan)
        self.tasks = PrefectTasks(
            self.plan,
            self.tags,
            storage=options.storage_for(workflow.root_dir),
            workflow_name=workflow.name,
        )
        self.live = LiveMode(checkpoint_locks(self.tasks.storage))
        self.executor = TreeExecutor(
            self.plan,
            self.tasks,
            self.runners,
            self.tracker,
            self.tags,
            mode=self.live,
            restorer=Restorer() if options.restore else None,
        )

    async def start(self) -> None:
        """Start the task runners (Dask: the cluster and the services actor) and bind the
        runtime the leaf and branch bodies call."""
        self.spec = await self.runners.start(self.spec)
        if self.spec.services is not None:
            from .dask import ActorServices

            self.services = ActorServices(self.spec)
        runner = self.options.runner or run_task
        runtime = FlowRuntime(self.workflow, self.spec, self.services, runner, self.tracker)
        self.tasks.bind(self.spec, runtime, self.executor)
        self.live.gates = ApprovalGates(
            self.spec.storage,
            runtime,
            presets=self.options.approvals,
            ask=self.options.ask,
            flow_run=FlowRunContext.get(),
        )
        runtime.gates = self.live.gates
        self.live.gates.listener = self.tracker.approved

    async def usage_report(self) -> dict[str, dict[str, Any]]:
        return await self.services.report()

    async def aclose(self) -> None:
        await self.live.locks.release_all()  # checkpoints written or not, the run lets go
        try:
            if self.services is not self.local:
                await self.services.aclose()
            await self.local.aclose()
        finally:
            await self.runners.aclose()


def checkpoint_scope(options: RunOptions, rerun: frozenset[str] = frozenset()) -> CheckpointScope:
    """How far this run's checkpoints reach (``compile.scope``): its lineage is the current
    flow run (a UI Retry keeps it), or the run ``folpipe resume`` continues; ``rerun``: the
    passes ``--from`` asks again (``compile.rerun``), keyed on the ``--from`` run that asked
    (this flow run, or the one a resume continues: ``options.rerun_id``), so a resumed
    ``--from`` run replays what its re-run passes already paid for."""
    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    own = str(flow_run.id) if flow_run is not None else uuid.uuid4().hex
    return CheckpointScope(
        lineage=options.lineage or own,
        deployment=flow_run is not None and flow_run.deployment_id is not None,
        across_runs=options.across_runs,
        fresh=options.fresh,
        rerun=rerun,
        rerun_id=(options.rerun_id or own) if rerun else "",
    )


async def check_providers(services: ModelServices, tasks: Sequence[Task]) -> None:
    """Resolve every agent task's provider up front: config mistakes fail before any call.

    A task with tools also asks its provider whether the model can call tools
    (``check_capabilities``, e.g. Ollama models without tool support fail here, FP323).
    """
    for task in tasks:
        if task.runs_agent:
            provider = services.provider_for(task)
            check = getattr(provider, "check_capabilities", None)
            if check is not None and any(tool.executable for tool in task.tools):
                try:
                    await check(task)
                except ProviderError:  # server unreachable now: the model call will report it
                    continue


def _target(workflow: Workflow, options: RunOptions) -> Task:
    return workflow.find(options.only) if options.only else workflow.root


def check_run_sdks(workflow: Workflow, options: RunOptions) -> None:
    """FP321 when a task of this run needs a model / MCP SDK this interpreter cannot import
    (found without importing it: nothing has started yet). A stand-in runner (``folpipe
    test``'s stubs) decides itself what its tasks call: not checked."""
    if options.runner is not None:
        return
    override = override_of(options)
    tasks = _target(workflow, options).walk()
    check_sdks(workflow, tasks, override.name if override is not None else None)


async def preflight(workflow: Workflow, options: RunOptions, plan: Plan) -> None:
    """Raise ``ConfigError`` before a flow run exists when a provider or runner cannot work."""
    check_run_sdks(workflow, options)
    Runners(plan).check()
    services = ModelServices(workflow, RunSpec.of(workflow, options))
    try:
        await check_providers(services, list(_target(workflow, options).walk()))
    finally:
        await services.aclose()


async def run_root(
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    options: RunOptions | None = None,
    *,
    plan: Plan | None = None,
) -> RunResult:
    """Execute ``workflow`` inside the current (existing) flow run and report it.

    Seeds the context (root ``context:`` + ``context``), runs the root task (or only
    ``options.only``), writes the summary artifact and returns a ``RunResult``; it never
    raises for task failures (``RunResult.status == "failed"``, ``.error``). The objects
    alive when it starts stay out of garbage-collection passes until it ends (``workflow.heap``).
    """
    options = options or RunOptions()
    with older_objects_set_aside(), collecting(StoreEvents()), _run_span(workflow, options) as span:
        result = await _run_root(workflow, context, options, plan, span.traceparent)
        span.finish(result.status, result.tasks, result.costs.total_usd if result.costs else 0)
        return result


def _run_span(workflow: Workflow, options: RunOptions) -> Any:
    """The run's span (``telemetry``); Prefect's task runs nest in it (the flow run's labels
    say where they do)."""
    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    labels = flow_run.labels if flow_run is not None else None
    resumes = _resumed_trace(workflow, options) if options.resumed_from else None
    return telemetry.run_span(
        workflow.name, labels=labels, lineage=options.lineage, resumes=resumes
    )


def _resumed_trace(workflow: Workflow, options: RunOptions) -> str | None:
    """The traceparent of the run ``folpipe resume`` continues (its run record keeps it)."""
    record = read_record(runs_dir(workflow.root_dir) / str(options.resumed_from)) or {}
    trace = record.get("trace")
    return trace if isinstance(trace, str) else None


async def _run_root(
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    plan: Plan | None,
    trace: str | None = None,
) -> RunResult:
    WRITER.touch()
    SETTLE.arm()
    prefix_every_line()  # the task logs' joined lines, each with its prefix on a terminal
    run = WorkflowRun(workflow, options, plan)
    run.spec = replace(run.spec, trace=trace)  # the leaves continue the run's trace
    flow_run_id, _ = await asyncio.gather(_tag_flow_run(run.tags.of()), run.tags.read_limits())
    record = await _start_record(
        workflow, context, options, flow_run_id, run.spec.checkpoints.rerun_id, trace
    )
    if record is not None:
        record.follow(run.tracker)
    target = _target(workflow, options)
    seeded = seed_context(workflow, context)
    started = time.monotonic()
    by_task: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    try:
        check_root_inputs(target, seeded)
        prepare_rerun(workflow, context, options, run.plan, run.spec.checkpoints)
        if run.spec.storage is not None:  # FP542 now, not at the first entry
            await asyncio.to_thread(store_key)
        await check_providers(run.local, list(target.walk()))
        await run.start()
        outcome = await run.executor.run_target(target, seeded)
        by_task = await run.usage_report()
        _count_failed_attempts(run.tracker, by_task)
        usage = await run.services.usage()
    except MissingInputError as exc:
        run.tracker.fail_unstarted(target, describe_error(exc))
        outcome = Outcome("failed", error=exc)
    except ConfigError as exc:
        outcome = Outcome("failed", error=exc)
    except BaseException as exc:  # a signal or a cancellation: say what ran, then go on
        if is_signal(exc):  # suspended at an approval gate: Prefect resumes the flow run
            _suspended(run, record)
        else:
            _stopped(run, workflow, seeded, flow_run_id, exc, record)
        raise
    finally:
        await asyncio.to_thread(SIDE_WRITES.drain)  # shared checkpoints, manifests
        await run.aclose()
    result = _result(run, workflow, target, seeded, outcome, flow_run_id, (by_task, usage))
    if options.rerun_from and not isinstance(result.error, ConfigError):
        before = record.name if record is not None else None
        result.rerun = rerun_report(workflow, result, options.rerun_from, before)
    if record is not None:
        record.finish(result, record_fields(workflow, result))  # one write at the end
        keep_passes(record.name, workflow, run.tracker.passes)
    if run.spec.artifacts != "none":
        _summary(workflow, result, time.monotonic() - started)
    WRITER.touch(END_HOLD_S)  # the flow run is about to end: reports wait for that
    return result


async def _start_record(
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    flow_run_id: str | None,
    rerun_id: str = "",
    trace: str | None = None,
) -> RunRecord | None:
    """Mark runs that died with their process ``Crashed``, then record this one as it starts
    (``run-task`` keeps no record); ``rerun_id``: what keys its ``--from`` passes, ``trace``
    the run's ``traceparent``."""
    if not options.keep_run_record or options.only:
        return None
    await settle_crashed_runs(workflow.root_dir)
    context_now = FlowRunContext.get()
    await settle_earlier_attempt(context_now.flow_run if context_now else None)
    return RunRecord.start(workflow, context, options, flow_run_id, rerun_id=rerun_id, trace=trace)


def _result(
    run: WorkflowRun,
    workflow: Workflow,
    target: Task,
    seeded: dict[str, Any],
    outcome: Outcome,
    flow_run_id: str | None,
    usage: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> RunResult:
    """The report of the run; ``usage`` (the ledger's per-task and run usage) makes its cost
    table."""
    final = child_context(seeded)
    merge_delta(final, outcome.delta)
    rows = [row for row in run.tracker.rows() if _in_scope(row["path"], target.path)]
    return RunResult(
        status="failed" if outcome.status == "failed" else "completed",
        context=plain(final),
        tasks=rows,
        flow_run_id=flow_run_id,
        workflow=workflow.name,
        error=outcome.error,
        costs=cost_report(*usage, [row["path"] for row in rows]) if usage else None,
        warnings=events.warnings() if (events := current_events()) is not None else [],
    )


def _stopped(
    run: WorkflowRun,
    workflow: Workflow,
    seeded: dict[str, Any],
    flow_run_id: str | None,
    exc: BaseException,
    record: RunRecord | None,
) -> None:
    """A run stopped by a signal: what ran so far goes to ``options.interrupted`` (for the
    CLI's report) and to the run record (``interrupted``: ``resume`` picks it up)."""
    error = interruption(exc) or RunInterrupted(f"the run stopped: {describe_error(exc)}")
    reason = f"interrupted: {error}"
    for path, task_record in run.tracker.records.items():
        if task_record.status == "running":
            run.tracker.finish(path, "failed", error=reason)
    target = _target(workflow, run.options)
    result = _result(run, workflow, target, seeded, Outcome("failed", error=error), flow_run_id)
    run.options.interrupted = result
    if record is not None:
        record.end("interrupted", result.tasks, str(error))


def _suspended(run: WorkflowRun, record: RunRecord | None) -> None:
    """A run suspended for an approval is not interrupted: its record says ``suspended``
    (``resume`` leaves it alone; the flow run goes on once answered)."""
    if record is not None:
        rows = [{"path": path, "status": task.status} for path, task in run.tracker.records.items()]
        record.end("suspended", rows, None)


def check_root_inputs(target: Task, context: Mapping[str, Any]) -> None:
    """FP313 before anything runs when the workflow's required inputs are missing (the root's
    ``input.required``: the required parameters of its flow and deployments)."""
    if target.path or target.config.input is None:
        return
    missing = [key for key in target.config.input.required if key not in context]
    if missing:
        raise MissingInputError(
            f"the workflow's required {noun(len(missing), 'input')} "
            f"{', '.join(map(repr, missing))} {noun(len(missing), 'was')} not given",
            hint="pass them as parameters (--param / the deployment form), in --context, "
            "or give defaults in the root task.yaml `context:`",
        )


def _count_failed_attempts(tracker: RunTracker, usage: Mapping[str, Mapping[str, Any]]) -> None:
    """Model calls and tokens of failed attempts (a retried or failed task) into the report.

    The tracker charges each *successful* pass's usage; the budget ledger saw every call of
    the run (on Dask workers too), so a task's report is the larger of the two."""
    for path, totals in usage.items():
        record = tracker.records.get(path)
        if record is None:
            continue
        record.model_calls = max(record.model_calls, totals["model_calls"])
        record.replayed_calls = max(record.replayed_calls, totals.get("replayed_calls", 0))
        record.input_tokens = max(record.input_tokens, totals["input_tokens"])
        record.output_tokens = max(record.output_tokens, totals["output_tokens"])


def _in_scope(path: str, root: str) -> bool:
    return not root or path == root or path.startswith(f"{root}/")


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


def _summary(workflow: Workflow, result: RunResult, elapsed: float) -> None:
    key = artifacts.summary_key(workflow.name)
    cost = result.costs.total_usd if result.costs else 0.0
    description = (
        f"folpipe run of {workflow.name}: {result.status} in {elapsed:.1f}s, ${cost:.4f}; "
        + result.counts().line()
    )
    if result.rerun is not None:
        description += f"; {rerun_line(result.rerun)}"
    artifacts.submit_summary(key, result.tasks, description, result.costs)
    if result.costs is not None:
        artifacts.submit_cost(slug(f"{workflow.name}-cost", limit=90), workflow.name, result.costs)
