"""The flows Prefect deploys: parameters from the root inputs, and the generic entrypoint."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prefect_folpipe import folder_to_flow

FIXTURE = Path(__file__).parent.parent / "fixtures" / "deploy" / "report"


@pytest.fixture
def report(tmp_path: Path) -> Path:
    """A private copy of the report workflow (its checkpoints land in the copy)."""
    target = tmp_path / "report"
    shutil.copytree(FIXTURE, target)
    return target


def test_root_inputs_are_the_flows_parameters(report: Path) -> None:
    schema = folder_to_flow(report).parameters.model_dump()
    assert list(schema["properties"]) == ["context", "topic", "audience"]
    assert "required input" in schema["properties"]["topic"]["description"]
    assert schema["required"] == []


@pytest.mark.prefect
async def test_input_parameters_reach_the_workflow(prefect_harness: str, report: Path) -> None:
    flow = folder_to_flow(report)
    context = await flow(topic="checkpoints", context={"audience": "operators"})
    assert context["topic"] == "checkpoints"
    assert "checkpoints" in str(context["research"])
    assert context["report"] == "A short report."


@pytest.mark.prefect
async def test_generic_flow_runs_a_folder_named_after_it(
    prefect_harness: str, report: Path
) -> None:
    from prefect_folpipe.flows import run_workflow

    state = await run_workflow(
        path=str(report), context={"topic": "generic flows"}, return_state=True
    )
    assert state.is_completed(), state.message
    context = await state.aresult()
    assert "generic flows" in str(context["research"])

    from prefect.client.orchestration import get_client

    async with get_client() as client:
        run = await client.read_flow_run(state.state_details.flow_run_id)
    assert run.name.startswith("report-")
    assert "workflow:report" in run.tags


@pytest.mark.prefect
async def test_status_lists_the_folders_runs_with_task_counts(
    prefect_harness: str, report: Path, tmp_path: Path
) -> None:
    import asyncio

    from prefect_folpipe.compile import arun_workflow
    from prefect_folpipe.deploy.status import recent_runs
    from prefect_folpipe.validate import load_workflow

    other = tmp_path / "elsewhere" / "report"  # same workflow name, another folder
    shutil.copytree(FIXTURE, other)
    assert (await arun_workflow(other, {"topic": "x"})).status == "completed"
    first = await arun_workflow(report, {"topic": "status"})
    second = await arun_workflow(report, {"topic": "status"})
    assert (first.status, second.status) == ("completed", "completed")

    workflow = load_workflow(report)
    runs = await recent_runs(workflow)
    for _ in range(20):  # task runs are recorded from events, a moment after the flow run
        if [r.tasks.total for r in runs[:2]] == [2, 2]:
            break
        await asyncio.sleep(1)
        runs = await recent_runs(workflow)
    assert [r.flow_run_id for r in runs] == [second.flow_run_id, first.flow_run_id]
    newest, oldest = runs
    assert (newest.state, newest.tasks.cached, newest.tasks.failed) == ("Completed", 2, 0)
    assert (oldest.state, oldest.tasks.completed, oldest.tasks.cached) == ("Completed", 2, 0)
    assert newest.duration_s is not None and newest.flow_name == "report"


@pytest.mark.prefect
async def test_generic_flow_fails_cleanly_and_resumes(prefect_harness: str, report: Path) -> None:
    from prefect_folpipe.errors import WorkflowFailed
    from prefect_folpipe.flows import run_workflow

    marker = report / ".folpipe" / "fail-write"
    marker.parent.mkdir()
    marker.touch()
    state = await run_workflow(path=str(report), context={"topic": "t"}, return_state=True)
    assert state.is_failed()
    assert "write" in (state.message or "")
    error = await state.aresult(raise_on_failure=False)
    assert isinstance(error, WorkflowFailed)
    marker.unlink()
    state = await run_workflow(path=str(report), context={"topic": "t"}, return_state=True)
    assert state.is_completed()
    assert (await state.aresult())["report"] == "A short report."
