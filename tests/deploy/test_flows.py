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
    """The deployment form: required inputs required, declared types, descriptions from the
    task.yaml comments or `description:`, `context` free-form, the run options last."""
    schema = folder_to_flow(report).parameters.model_dump()
    properties = schema["properties"]
    assert list(properties) == [
        "context", "topic", "audience", "pages", "fresh", "reuse_checkpoints", "rerun_from",
        "restore_from",
    ]  # fmt: skip
    assert schema["required"] == ["topic"]
    assert properties["topic"]["type"] == "string"
    assert properties["topic"]["description"] == "what the report is about"
    assert properties["audience"]["description"] == "who reads it"
    assert {"type": "integer"} in properties["pages"]["anyOf"]
    assert properties["pages"]["description"] == "how long the report may be, in pages"
    assert properties["context"]["anyOf"][0] == {"additionalProperties": True, "type": "object"}
    assert properties["fresh"] == {
        "default": False,
        "description": "re-run every task: ignore the checkpoints of earlier runs",
        "position": 4,
        "title": "fresh",
        "type": "boolean",
    }


@pytest.mark.prefect
async def test_a_required_input_may_come_in_the_context_and_is_checked(
    prefect_harness: str, report: Path
) -> None:
    from prefect_folpipe.compile import arun_workflow
    from prefect_folpipe.errors import WorkflowFailed

    flow = folder_to_flow(report)
    context = await flow(context={"topic": "inside the context", "pages": 2})
    assert "inside the context" in str(context["research"])
    with pytest.raises(WorkflowFailed) as excinfo:
        await flow(context={"audience": "nobody gave a topic"})
    result = excinfo.value.result
    assert result.task("")["status"] == "failed"
    assert "FP313" in result.task("")["error"] and "'topic'" in result.task("")["error"]
    assert {row["status"] for row in result.tasks[1:]} == {"skipped"}
    assert result.usage["model_calls"] == 0
    again = await arun_workflow(report, {})
    assert again.status == "failed" and "topic" in str(again.error)


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
    from prefect_folpipe.flows import run_workflow_folder as run_workflow

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
    import time

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
    deadline = time.monotonic() + 20  # task runs are recorded from events, after the flow run
    while time.monotonic() < deadline:
        if len(runs) == 2 and runs[0].tasks.total and runs[1].tasks.total == 3:
            break
        await asyncio.sleep(0.2)
        runs = await recent_runs(workflow)
    assert [r.flow_run_id for r in runs] == [second.flow_run_id, first.flow_run_id]
    newest, oldest = runs
    # counted as the run summary counts them: one per task, the root included (the fully
    # cached re-run is one restored task run in the UI, standing for every task)
    assert (newest.state, newest.tasks.failed) == ("Completed", 0)
    assert newest.tasks.cached == newest.tasks.total == 3
    assert (oldest.state, oldest.tasks.completed, oldest.tasks.cached) == ("Completed", 3, 0)
    assert newest.duration_s is not None and newest.flow_name == "report"


@pytest.mark.prefect
async def test_generic_flow_fails_cleanly_and_resumes(prefect_harness: str, report: Path) -> None:
    from prefect_folpipe.errors import WorkflowFailed
    from prefect_folpipe.flows import run_workflow_folder as run_workflow

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
