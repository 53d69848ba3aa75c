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
