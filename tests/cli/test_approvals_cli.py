"""``folpipe approvals``: a gate waiting in a suspended run is listed (run, target, question,
deadline, form) and answered through the API, typed like ``--approve``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.approvals._question import Question
from prefect_folpipe.compile.approvals._suspend import form_model
from prefect_folpipe.deploy.approvals import answer_gate, waiting_gates
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.validate import load_workflow
from prefect_folpipe.workflow.names import GENERIC_FLOW_NAME

pytestmark = pytest.mark.prefect


async def _suspended_run(
    root: Path, question: Question, deadline: float | None = None
) -> tuple[Any, dict[str, str]]:
    """A top-level run of the folder suspended at ``question``'s form, as a gate leaves it."""
    from prefect.client.orchestration import get_client
    from prefect.input import keyset_from_paused_state
    from prefect.states import Running, Suspended

    async with get_client() as client:
        flow_id = await client.create_flow_from_name(GENERIC_FLOW_NAME)
        deployment = await client.create_deployment(flow_id=flow_id, name=f"gate-{root.name}")
        run = await client.create_flow_run_from_deployment(
            deployment, parameters={"path": str(root)}
        )
        await client.set_flow_run_state(run.id, Running(), force=True)
        state = Suspended(timeout_seconds=3600, pause_key="folpipe-release-tool")
        keyset = keyset_from_paused_state(state)
        state.state_details.run_input_keyset = keyset
        await client.set_flow_run_state(run.id, state, force=True)
        await form_model(question, deadline).asave(keyset, flow_run_id=run.id)
        return run, keyset


def test_a_waiting_tool_gate_is_listed_and_answered(make_workflow, prefect_harness):
    wf = make_workflow({"task.yaml": {"name": "release"}, "instructions.md": "Go."})
    workflow = load_workflow(wf)
    question = Question(
        "release", "release", "Deploy 1.2?", {"approved": "bool", "reason": "str"}, 3600.0,
        tool="deploy",
    )  # fmt: skip
    run, keyset = asyncio.run(_suspended_run(wf, question))
    (gate,) = asyncio.run(waiting_gates(workflow))
    assert gate.flow_run_id == str(run.id) and gate.run_name == run.name
    assert gate.target == "release · tool deploy" and gate.question == "Deploy 1.2?"
    assert gate.fields == {"approved": "bool", "reason": "str"}
    assert gate.deadline and gate.waiting_since
    with pytest.raises(ConfigError) as bad:
        asyncio.run(answer_gate(str(run.id), None, {"approved": "maybe", "reason": ""}))
    assert bad.value.code == "FP408"
    asyncio.run(answer_gate(run.name, None, {"approved": "no", "reason": "freeze"}))

    async def given() -> Any:
        from prefect.client.orchestration import get_client
        from prefect.input.actions import aread_flow_run_input

        async with get_client() as client:
            state = (await client.read_flow_run(run.id)).state
        return state, await aread_flow_run_input(keyset["response"], flow_run_id=run.id)

    state, answer = asyncio.run(given())
    assert answer == {"approved": False, "reason": "freeze"}
    assert not state.is_paused()
    assert asyncio.run(waiting_gates(workflow)) == []


def test_a_gate_with_a_default_shows_its_own_deadline(make_workflow, prefect_harness):
    wf = make_workflow({"task.yaml": {"name": "ship"}, "instructions.md": "Go."})
    question = Question(
        "ship", "ship", "Ship 1.2?", {"approved": "bool"}, 60.0, {"approved": False},
    )  # fmt: skip
    asyncio.run(_suspended_run(wf, question, deadline=1_800_000_000.0))
    (gate,) = asyncio.run(waiting_gates(load_workflow(wf)))
    # the form says what happens at the deadline; the list shows that deadline, not Prefect's
    # later pause timeout, and the question without the note
    assert gate.question == "Ship 1.2?" and gate.deadline == "2027-01-15T08:00:00+00:00"
