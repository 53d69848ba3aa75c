"""The public API: folder_to_flow (sync and awaited), run_workflow options, graph edges."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from records import recorded_task_runs

from prefect_folpipe import WorkflowFailed, folder_to_flow
from prefect_folpipe.compile.options import RunOptions

pytestmark = pytest.mark.prefect


def _two_leaves(reply_b: Any = "bee") -> dict[str, Any]:
    return {
        "task.yaml": {"name": "api-wf", "context": {"seed": 1}},
        "replies.yaml": {"tasks": {"a": ["ay"], "b": [reply_b]}},
        "subtasks/a/instructions.md": "A.",
        "subtasks/b/instructions.md": "B.",
    }


def test_folder_to_flow_called_synchronously_returns_final_context(make_workflow, prefect_harness):
    flow = folder_to_flow(make_workflow(_two_leaves()))
    assert flow.name == "api-wf"
    # context first; the run options every deployment gets; nothing required
    assert list(flow.parameters.properties) == [
        "context", "fresh", "reuse_checkpoints", "rerun_from", "restore_from"
    ]  # fmt: skip
    assert not flow.parameters.required
    final = flow(context={"extra": True})
    assert final == {"seed": 1, "extra": True, "a": "ay", "b": "bee"}


async def test_folder_to_flow_can_be_awaited(make_workflow, prefect_harness):
    flow = folder_to_flow(make_workflow(_two_leaves()))
    final = await flow()
    assert final["a"] == "ay" and final["seed"] == 1


def test_folder_to_flow_raises_workflow_failed_with_the_result(make_workflow, prefect_harness):
    flow = folder_to_flow(make_workflow(_two_leaves({"error": "auth"})))
    with pytest.raises(WorkflowFailed) as caught:
        flow()
    assert caught.value.result.status == "failed"
    assert caught.value.result.task("b")["status"] == "failed"


def test_parallel_workers_bound_concurrency(make_workflow, run):
    files = {
        "task.yaml": {"name": "bounded", "settings": {"parallel_workers": 2}},
        "replies.yaml": {"default": "ok", "latency_s": 0.3},
    }
    for i in range(5):
        files[f"subtasks/t{i}/instructions.md"] = f"Task {i}."
    running: set[str] = set()
    peak = [0]

    def listener(event: str, record: Any) -> None:
        if not record.path:
            return
        if event == "start":
            running.add(record.path)
        elif event == "finish":
            running.discard(record.path)
        peak[0] = max(peak[0], len(running))

    result = run(make_workflow(files), options=RunOptions(listeners=[listener]))
    assert result.status == "completed"
    assert peak[0] == 2


def test_graph_dependencies_are_real_upstream_edges_in_prefect(make_workflow, run):
    files = {
        "task.yaml": {"name": "edges", "subtasks": {"execution_type": "graph"}},
        "subtasks/fetch/instructions.md": "Fetch.",
        "subtasks/report/instructions.md": "Report.",
        "subtasks/report/task.yaml": {"depends_on": ["fetch"]},
    }
    result = run(make_workflow(files))
    assert result.status == "completed"
    runs = asyncio.run(recorded_task_runs(result.flow_run_id, names={"fetch", "report"}))
    by_name = {r.name: r for r in runs}
    assert {"fetch", "report"} <= set(by_name), sorted(by_name)
    upstream_ids = {
        str(item.id) for items in by_name["report"].task_inputs.values() for item in items
    }
    assert str(by_name["fetch"].id) in upstream_ids


def test_a_run_builds_its_plan_once_and_checks_its_runners_once(
    make_workflow, run, monkeypatch
) -> None:
    """preflight, the flow and the run all read the one plan ``run_workflow`` built."""
    from prefect_folpipe.compile import api, build, runner

    built: list[str] = []
    checked: list[int] = []
    real_build, real_check = api.build_plan, runner.Runners.check

    def counting_build(workflow: Any) -> Any:
        built.append(workflow.name)
        return real_build(workflow)

    def counting_check(self: Any) -> None:
        checked.append(1)
        real_check(self)

    for module in (api, build):
        monkeypatch.setattr(module, "build_plan", counting_build)
    monkeypatch.setattr(runner.Runners, "check", counting_check)
    result = run(make_workflow(_two_leaves()))
    assert result.status == "completed"
    assert built == ["api-wf"]
    assert checked == [1]
