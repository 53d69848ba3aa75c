"""Runs that died with their process are marked ``Crashed`` in Prefect (best effort).

A SIGKILLed ``folpipe run`` cannot tell the API that its flow run ended: the UI and ``folpipe
status`` would show it ``Running`` forever. The next run (or resume) of the same workflow
finds its run record still ``running`` with a dead process (``runs.settle_dead_runs``) and
sets that flow run — and its task runs and subflow runs that were still going — to
``Crashed`` through the API.

A flow run retried as a whole (the UI's Retry, ``folpipe resume`` through the API) keeps the
task runs of its earlier attempt. When the retry starts, ``settle_earlier_attempt`` gives
those the killed attempt left ``Running`` a final state that says what happened, and
replaces Prefect's "Task rolled back as part of transaction" (its words for a task whose
enclosing branch was interrupted before it ended, so its checkpoint was not kept) by a
sentence that says so; each task then has its latest word in the retry's own task run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterParentFlowRunId,
    FlowRunFilterState,
    FlowRunFilterStateType,
    TaskRunFilter,
    TaskRunFilterState,
    TaskRunFilterStateName,
    TaskRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.states import Completed, Crashed

from ..report import list_runs, settle_dead_runs, write_record

LOG = logging.getLogger("prefect_folpipe.compile")
UNFINISHED_STATES = [StateType.RUNNING, StateType.PENDING, StateType.SCHEDULED, StateType.PAUSED]


def _unreported(root: Path) -> list[dict[str, Any]]:
    return [
        record
        for record in list_runs(root, statuses=("crashed",))
        if record.get("flow_run_id") and not record.get("crash_reported")
    ]


async def settle_crashed_runs(root: Path) -> list[str]:
    """Mark the flow runs of crashed runs ``Crashed``; the ids it marked. Never raises."""
    settle_dead_runs(root)
    marked: list[str] = []
    pending = _unreported(root)
    if not pending:
        return marked
    try:
        async with get_client() as client:
            for record in pending:
                if await _crash(client, UUID(str(record["flow_run_id"])), record):
                    marked.append(str(record["flow_run_id"]))
                record["crash_reported"] = True
                write_record(Path(record.pop("file")), record)
    except Exception as exc:  # the API may be another one, or down: the record still says it
        LOG.warning("could not mark crashed flow runs in Prefect: %s", exc)
    return marked


async def _crash(client: Any, flow_run_id: UUID, record: dict[str, Any]) -> bool:
    try:
        flow_run = await client.read_flow_run(flow_run_id)
    except Exception:  # not in this API (another server, a deleted run)
        return False
    if flow_run.state is not None and flow_run.state.is_final():
        return False
    message = f"folpipe: {record.get('error') or 'the process running this flow run died'}"
    await _crash_task_runs(client, [flow_run_id], message)
    subflows = await client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=UNFINISHED_STATES)),
        )
    )
    for subflow in subflows:
        await client.set_flow_run_state(subflow.id, Crashed(message=message), force=True)
    await _crash_task_runs(client, [s.id for s in subflows], message)
    await client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
    return True


async def _crash_task_runs(client: Any, flow_run_ids: Iterable[UUID], message: str) -> None:
    ids = list(flow_run_ids)
    if not ids:
        return
    task_runs = await client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)),
        task_run_filter=TaskRunFilter(
            state=TaskRunFilterState(type=TaskRunFilterStateType(any_=UNFINISHED_STATES))
        ),
    )
    for task_run in task_runs:
        await client.set_task_run_state(task_run.id, Crashed(message=message), force=True)


EARLIER_ATTEMPT = (
    "folpipe: the process running an earlier attempt of this flow run died before this task "
    "ended; the retry runs the task again (or restores it from its checkpoint)"
)
NOT_KEPT = (
    "folpipe: completed, but the attempt was interrupted before its branch ended, so its "
    "checkpoint was not kept; the retry runs the task again"
)


async def settle_earlier_attempt(flow_run: Any) -> int:
    """At the start of a retried flow run: its earlier attempt's unfinished task runs become
    ``Crashed`` and its rolled-back ones say why (see the module). Never raises."""
    if flow_run is None or (flow_run.run_count or 0) <= 1:
        return 0
    settled = 0
    try:
        async with get_client() as client:
            only = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))
            left = await client.read_task_runs(
                flow_run_filter=only,
                task_run_filter=TaskRunFilter(
                    state=TaskRunFilterState(type=TaskRunFilterStateType(any_=UNFINISHED_STATES))
                ),
            )
            for task_run in left:
                await client.set_task_run_state(
                    task_run.id, Crashed(message=EARLIER_ATTEMPT), force=True
                )
            rolled = await client.read_task_runs(
                flow_run_filter=only,
                task_run_filter=TaskRunFilter(
                    state=TaskRunFilterState(name=TaskRunFilterStateName(any_=["RolledBack"]))
                ),
            )
            for task_run in rolled:
                state = Completed(name="Not kept", message=NOT_KEPT)
                await client.set_task_run_state(task_run.id, state, force=True)
            settled = len(left) + len(rolled)
    except Exception as exc:  # cosmetic: the run goes on
        LOG.debug("earlier attempt's task runs not settled: %s", exc)
    return settled
