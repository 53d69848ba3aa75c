"""What the Prefect UI shows agrees with the run (issue 30): a task an approval gate kept
from running has its own task run in a state that says so, with the answer and who gave it;
dependency arrows (task-run inputs) only where the plan has an edge; Prefect's links from a
result to its task run are dropped once the executor has the state."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from uuid import UUID

import pytest

from prefect_folpipe.compile.options import RunOptions

pytestmark = pytest.mark.prefect


def _gated(gate: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "task.yaml": {"name": "release", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {"tasks": {"build": [{"output": {"artifact": "b42"}}]}},
        "subtasks/10_build/instructions.md": "Build it.",
        "subtasks/10_build/task.yaml": {"output": ["artifact"]},
        "subtasks/20_ship/instructions.md": "Ship it.",
        "subtasks/20_ship/task.yaml": {
            "approval": gate or {"prompt": "Ship {{ context.artifact }}?"},
            "conditions": {"skip_if": "not context.approved"},
            "on_failure": "skip",
        },
        "subtasks/30_announce/instructions.md": "Announce.",
    }


def _task_runs(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read() -> list[Any]:
        async with get_client() as client:
            only = FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)]))
            return await client.read_task_runs(flow_run_filter=only)

    return asyncio.run(read())


def _by_name(flow_run_id: str, name: str) -> dict[str, Any]:
    """Task runs by name, polled until ``name`` is there (task runs are recorded from events)."""
    deadline = time.monotonic() + 30
    while True:
        found = {run.name: run for run in _task_runs(flow_run_id)}
        state = found[name].state if name in found else None  # a run is recorded before its state
        if (state is not None and state.is_final()) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_declined_gate_is_the_gated_tasks_own_task_run(make_workflow, run) -> None:
    wf = make_workflow(_gated())
    result = run(wf, options=RunOptions(approvals={"ship": {"approved": "no"}}))
    assert result.status == "completed", result.error
    row = result.task("ship")
    assert row["status"] == "skipped"
    assert row["error"].startswith("declined: approved=false (--approve")
    ship = _by_name(result.flow_run_id, "ship")["ship"]
    assert (ship.state.type.value, ship.state.name) == ("CANCELLED", "Declined")
    assert "approved=false" in ship.state.message and "--approve" in ship.state.message


def test_an_unanswered_gate_is_the_gated_tasks_own_failed_task_run(make_workflow, run) -> None:
    wf = make_workflow(_gated())
    result = run(wf)  # no terminal, no deployment, no --approve: nobody can answer
    assert result.status == "completed", result.error  # on_failure: skip absorbs it
    assert result.task("ship")["status"] == "failed"
    ship = _by_name(result.flow_run_id, "ship")["ship"]
    assert (ship.state.type.value, ship.state.name) == ("FAILED", "Unanswered")
    assert "nobody can answer" in ship.state.message


def _graph(fail: bool) -> dict[str, Any]:
    replies = {"a": [{"output": {"x": 1}}], "b": [{"output": {"y": [1, 2]}}]}
    if fail:
        replies["c"] = [{"error": "auth"}]
    return {
        "task.yaml": {"name": "arrows", "subtasks": {"execution_type": "graph"}},
        "replies.yaml": {"tasks": replies},
        "subtasks/a/instructions.md": "A.",
        "subtasks/b/instructions.md": "B.",
        "subtasks/b/task.yaml": {"depends_on": ["a"]},
        "subtasks/c/instructions.md": "C.",
        "subtasks/d/instructions.md": "D.",
        "subtasks/d/task.yaml": {"depends_on": ["b"]},
    }


EDGES = {"b": {"a"}, "d": {"b"}}


@pytest.mark.parametrize("fail", [False, True], ids=["completed", "failed"])
def test_task_run_inputs_name_an_upstream_only_where_the_plan_has_an_edge(
    make_workflow, run, fail: bool
) -> None:
    wf = make_workflow(_graph(fail))
    result = run(wf, options=RunOptions(fresh=True))
    assert result.status == ("failed" if fail else "completed")
    runs = list(_by_name(result.flow_run_id, "d" if not fail else "c").values())
    name_of = {run.id: run.name for run in runs}
    for task_run in runs:
        upstream = {
            name_of.get(item.id, "?")
            for key, items in task_run.task_inputs.items()
            if key != "__parents__"
            for item in items
        }
        assert upstream == EDGES.get(task_run.name, set()), task_run.name


def test_a_finished_runs_result_is_not_linked_to_it_by_address(prefect_harness) -> None:
    from prefect import flow, task
    from prefect.context import FlowRunContext

    from prefect_folpipe.compile.runner import forget_result_links

    @task
    async def produce() -> dict[str, Any]:
        return {"items": [1, 2, 3], "text": "a result"}

    @flow
    async def parent() -> tuple[int, int]:
        state = await produce(return_state=True)
        linked = len(FlowRunContext.get().run_results)  # type: ignore[union-attr]
        forget_result_links(state)
        return linked, len(FlowRunContext.get().run_results)  # type: ignore[union-attr]

    linked, left = asyncio.run(parent())
    assert linked > 0 and left == 0
