"""``folpipe status``: recent runs of a workflow, read back from the Prefect API.

A workflow's runs are the top-level flow runs of its own flow (named after the workflow, from
``folder_to_flow`` or its ``flow.py``), the generic ``folpipe-run`` flow runs whose ``path``
parameter is the folder, and any top-level run tagged ``workflow:<name>`` (deployment tags).
Several folders may hold workflows of the same name, so a run counts for this folder when
it is in the folder's run records (``.folpipe/runs/``), when its deployment works in this
folder, or when it is an unfinished ad-hoc run. Works against the ephemeral history
(``$PREFECT_HOME``) as well as a server.

Task counts are one per task of the tree, the root included, as the run summary and the line
``folpipe run`` prints count them (``compile.report.count_tasks``): read from the run's
summary artifact, else its run record, else (a run still going, or killed) from its task
runs, the latest attempt of each (``deploy.taskruns``: a run retried from the UI or by
``folpipe resume`` holds the task runs of every attempt). All runs are read in a few batched
requests (runs, their subflow runs level by level, their task runs), so the command costs
about the same for one run or twenty.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from ..compile.plainhttp import api_client
from ..compile.report import TaskCounts, count_tasks
from ..workflow.names import GENERIC_FLOW_NAME
from ..workflow.tree import Task, Workflow
from .taskruns import latest_attempts, task_statuses

__all__ = ["RunSummary", "latest_attempts", "recent_runs", "summarise", "top_level_runs"]

PAGE = 200
MAX_DEPTH = 32


@dataclass
class RunSummary:
    """One workflow run as ``folpipe status`` shows it."""

    flow_run_id: str
    name: str
    flow_name: str
    state: str
    state_type: str
    start_time: str | None
    end_time: str | None
    duration_s: float | None
    deployment_id: str | None
    parameters: dict[str, Any]
    tags: list[str]
    tasks: TaskCounts = field(default_factory=TaskCounts)
    """How its tasks ended, counted as the run summary and ``folpipe run`` count them."""
    counted_from: str = "task runs"
    """Where ``tasks`` was read: ``summary`` (the run's summary artifact), ``run record``
    (``.folpipe/runs/``), or ``task runs`` (a run without either: running, or killed)."""
    cost_usd: float | None = None
    """Estimated cost of the run's model calls (from its summary artifact or run record)."""
    model_calls: int | None = None
    tokens: int | None = None
    message: str | None = None
    """The state's message (why a run failed or crashed)."""
    task_runs: dict[str, str] = field(default_factory=dict)
    """``{task run name: state name}`` of the latest attempt of each task run."""
    approvals: list[str] = field(default_factory=list)
    """Each approval gate answered in the run: target, answer, who answered and when."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def workflow_flow_name(workflow: Workflow) -> str:
    """The name of the workflow's own flow, as ``folder_to_flow`` names it."""
    from ..compile.tasks import flow_name

    return flow_name(workflow.name)


def _same_folder(parameters: dict[str, Any], root: Path) -> bool:
    value = parameters.get("path")
    if not isinstance(value, str):
        return False
    try:
        return Path(value).expanduser().resolve() == root.resolve()
    except OSError:
        return False


async def top_level_runs(client: Any, workflow: Workflow, limit: int) -> list[Any]:
    """The folder's most recent top-level flow runs (scheduled ones left out), newest first."""
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterParentTaskRunId,
        FlowRunFilterState,
        FlowRunFilterStateType,
        FlowRunFilterTags,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort

    own_name = workflow_flow_name(workflow)
    started = FlowRunFilterState(type=FlowRunFilterStateType(not_any_=[StateType.SCHEDULED]))
    top = FlowRunFilterParentTaskRunId(is_null_=True)
    by_flow = await client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[own_name, GENERIC_FLOW_NAME])),
        flow_run_filter=FlowRunFilter(parent_task_run_id=top, state=started),
        sort=FlowRunSort.EXPECTED_START_TIME_DESC,
        limit=limit * 4,
    )
    by_tag = await client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            parent_task_run_id=top,
            state=started,
            tags=FlowRunFilterTags(all_=[f"workflow:{workflow.name}"]),
        ),
        sort=FlowRunSort.EXPECTED_START_TIME_DESC,
        limit=limit,
    )
    flow_names = await _flow_names(client, {run.flow_id for run in [*by_flow, *by_tag]})
    where = _Whereabouts(workflow.root_dir.resolve(), recorded_run_ids(workflow.root_dir))
    runs: dict[UUID, Any] = {}
    for run in [*by_flow, *by_tag]:
        if run.id not in runs and await where.belongs(client, run, flow_names.get(run.flow_id)):
            runs[run.id] = run
    ordered = sorted(runs.values(), key=_started, reverse=True)
    return ordered[:limit]


def _started(run: Any) -> Any:
    return run.start_time or run.expected_start_time or run.created


def recorded_run_ids(root: Path) -> set[str]:
    """Flow-run ids of the run records the folder keeps under ``.folpipe/runs/``."""
    from ..compile.report import list_runs

    return {str(record.get("flow_run_id")) for record in list_runs(root)}


def deployment_directory(deployment: Any) -> Path | None:
    """The folder a deployment runs in (its ``set_working_directory`` pull step, or path)."""
    for step in deployment.pull_steps or []:
        for name, arguments in step.items():
            if name.endswith("set_working_directory") and isinstance(arguments, dict):
                return Path(str(arguments.get("directory", ""))).expanduser()
    return Path(deployment.path).expanduser() if deployment.path else None


class _Whereabouts:
    """Decides whether a flow run ran this folder (other folders may share its name)."""

    def __init__(self, root: Path, recorded: set[str]) -> None:
        self.root = root
        self.recorded = recorded
        self._deployments: dict[UUID, Path | None] = {}

    async def belongs(self, client: Any, run: Any, flow_name: str | None) -> bool:
        if flow_name == GENERIC_FLOW_NAME:
            return _same_folder(run.parameters, self.root)
        if str(run.id) in self.recorded:
            return True
        if run.deployment_id is None:  # ad hoc: recorded when it ends, so only if running
            return run.state is not None and not run.state.is_final()
        if run.deployment_id not in self._deployments:
            deployment = await client.read_deployment(run.deployment_id)
            self._deployments[run.deployment_id] = deployment_directory(deployment)
        directory = self._deployments[run.deployment_id]
        return directory is not None and _resolved(directory) == self.root


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


async def _flow_names(client: Any, flow_ids: set[UUID]) -> dict[UUID, str]:
    from prefect.client.schemas.filters import FlowFilter, FlowFilterId

    if not flow_ids:
        return {}
    flows = await client.read_flows(flow_filter=FlowFilter(id=FlowFilterId(any_=list(flow_ids))))
    return {flow.id: flow.name for flow in flows}


async def _descendant_runs(client: Any, root_ids: list[UUID]) -> tuple[dict[UUID, UUID], set[UUID]]:
    """``{subflow run id: its top-level run id}`` for every subflow run below ``root_ids``
    (one request per nesting level), and the parent task runs standing for them."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    root_of: dict[UUID, UUID] = {}
    placeholders: set[UUID] = set()
    frontier = {run_id: run_id for run_id in root_ids}
    for _ in range(MAX_DEPTH):
        if not frontier:
            break
        children = await _paged(
            client.read_flow_runs,
            flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=list(frontier))
            ),
        )
        placeholders.update(c.parent_task_run_id for c in children if c.parent_task_run_id)
        frontier = {
            child.id: frontier[child.parent_flow_run_id]
            for child in children
            if child.parent_flow_run_id in frontier and child.id not in root_of
        }
        root_of.update(frontier)
    return root_of, placeholders


async def _paged(read: Any, **filters: Any) -> list[Any]:
    collected: list[Any] = []
    offset = 0
    while True:
        page = await read(**filters, limit=PAGE, offset=offset)
        collected.extend(page)
        if len(page) < PAGE:
            return collected
        offset += PAGE


async def _task_runs(client: Any, flow_run_ids: list[UUID]) -> list[Any]:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    if not flow_run_ids:
        return []
    return await _paged(
        client.read_task_runs,
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=flow_run_ids)),
    )


def _duration(run: Any) -> float | None:
    if run.start_time and run.end_time:
        return round((run.end_time - run.start_time).total_seconds(), 3)
    if run.total_run_time:
        return round(run.total_run_time.total_seconds(), 3)
    return None


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def summarise(
    run: Any, flow_name: str, task_runs: list[Any], placeholders: set[UUID], root: Task
) -> RunSummary:
    """One run's summary from its own and its subflow runs' task runs (``recent_runs`` then
    counts its tasks from its run document when there is one)."""
    state = run.state
    latest = latest_attempts(task_runs, placeholders)
    statuses = task_statuses(task_runs, placeholders, root, state)
    return RunSummary(
        flow_run_id=str(run.id),
        name=run.name,
        flow_name=flow_name,
        state=state.name if state else "Unknown",
        state_type=state.type.value if state else "UNKNOWN",
        start_time=_iso(run.start_time),
        end_time=_iso(run.end_time),
        duration_s=_duration(run),
        deployment_id=str(run.deployment_id) if run.deployment_id else None,
        parameters=dict(run.parameters),
        tags=list(run.tags),
        tasks=count_tasks(statuses.values()),
        message=state.message if state and state.type.value != "COMPLETED" else None,
        task_runs={t.name: t.state.name for t in sorted(latest, key=lambda t: t.name)},
    )


async def recent_runs(workflow: Workflow, *, limit: int = 10) -> list[RunSummary]:
    """The workflow's most recent runs (newest first) with task counts and cost."""

    from ..compile.infra import ensure_api

    ensure_api()  # the local history needs a temporary server: one line, a generous timeout
    async with api_client() as client:
        runs = await top_level_runs(client, workflow, limit)
        names = await _flow_names(client, {run.flow_id for run in runs})
        root_of, placeholders = await _descendant_runs(client, [run.id for run in runs])
        root_of.update({run.id: run.id for run in runs})
        task_runs = await _task_runs(client, list(root_of))
        by_root: dict[UUID, list[Any]] = {run.id: [] for run in runs}
        for task_run in task_runs:
            by_root[root_of[task_run.flow_run_id]].append(task_run)
        summaries = [
            summarise(run, names.get(run.flow_id, ""), by_root[run.id], placeholders, workflow.root)
            for run in runs
        ]
        await _add_costs(client, workflow, summaries)
    return summaries


async def _add_costs(client: Any, workflow: Workflow, summaries: list[RunSummary]) -> None:
    """Each run's task counts and cost: its summary artifact (any server), else its local run
    record (the same rows: one per task)."""
    from ..compile.report import list_runs

    if not summaries:
        return
    found = await _summary_tables(client, workflow, [UUID(s.flow_run_id) for s in summaries])
    records = {str(r.get("flow_run_id")): r for r in list_runs(workflow.root_dir)}
    for summary in summaries:
        rows = found.get(summary.flow_run_id)
        if rows is not None:
            summary.tasks = count_tasks(str(row.get("status")) for row in rows)
            summary.counted_from = "summary"
            summary.cost_usd = round(sum(float(_cell(r, "usd", "cost_usd")) for r in rows), 6)
            summary.model_calls = sum(int(_cell(r, "calls", "model_calls")) for r in rows)
            summary.tokens = sum(int(r.get("tokens") or 0) for r in rows)
            summary.approvals = _approvals(rows, records.get(summary.flow_run_id))
            continue
        record = records.get(summary.flow_run_id) or {}
        counted = [row for row in record.get("tasks") or () if isinstance(row, dict)]
        if counted and record.get("status") not in ("running", "crashed"):  # else a second old
            summary.tasks = count_tasks(str(row.get("status")) for row in counted)
            summary.counted_from = "run record"
        summary.approvals = [str(a) for a in record.get("approvals") or ()]
        if record.get("cost_usd") is not None:
            summary.cost_usd = record["cost_usd"]
            usage = record.get("usage") or {}
            summary.model_calls = usage.get("model_calls")
            summary.tokens = (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)


def _cell(row: dict[str, Any], name: str, before: str) -> Any:
    """A summary cell by its name, or by the name older runs' summaries gave it."""
    return row.get(name, row.get(before)) or 0


def _approvals(rows: list[dict[str, Any]], record: dict[str, Any] | None) -> list[str]:
    """The gates answered in a run: its run record says them whole; an older run's summary
    had an ``approvals`` column; else each answered gate's note (``declined by ...``)."""
    if record and record.get("approvals"):
        return [str(a) for a in record["approvals"]]
    if any(r.get("approvals") for r in rows):
        return [str(r["approvals"]) for r in rows if r.get("approvals")]
    notes = [(r.get("task"), str(r.get("note") or "")) for r in rows]
    return [f"{task}: {note}" for task, note in notes if note.startswith(VERDICTS)]


VERDICTS = ("approved by ", "declined by ", "answered by ")


async def _summary_tables(
    client: Any, workflow: Workflow, flow_run_ids: list[UUID]
) -> dict[str, list[dict[str, Any]]]:
    """``{flow run id: summary table rows}`` in one request."""
    import json

    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )
    from prefect.client.schemas.sorting import ArtifactSort

    from ..compile.report.artifacts import summary_key

    artifacts = await client.read_artifacts(
        artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=flow_run_ids),
            key=ArtifactFilterKey(any_=[summary_key(workflow.name)]),
        ),
        sort=ArtifactSort.CREATED_DESC,  # a retried run has a summary per attempt: the last
        limit=PAGE,
    )
    tables: dict[str, list[dict[str, Any]]] = {}
    for artifact in artifacts:
        try:
            rows = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        except ValueError:
            continue
        if isinstance(rows, list) and artifact.flow_run_id is not None:
            tables.setdefault(str(artifact.flow_run_id), [r for r in rows if isinstance(r, dict)])
    return tables
