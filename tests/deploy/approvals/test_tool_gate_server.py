"""A tool-call gate in a deployment's run, end to end on a real ``prefect server`` and a
process worker: the run is suspended mid-conversation (no worker held), ``folpipe approvals``
lists the gate, ``folpipe approvals answer`` resumes it, and the resumed run replays the
conversation's earlier model call from the journal (0 repeated paid calls)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from builders import deploy_tools_md

from prefect_folpipe.compile.report._runs import list_runs

from ..runs import create_pool, folpipe, ok, run_worker_once, trigger, with_client
from ..server import PrefectServer

POOL = "folpipe-tool-gate"
pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]

TOOLS_MD = deploy_tools_md(
    '{prompt: "Deploy {{ args.version }}?", input: {approved: bool, reason: str}}'
)


def _folder(root: Path) -> Path:
    (root / "subtasks" / "10_release").mkdir(parents=True)
    (root / "task.yaml").write_text(
        "name: shipit\nproviders:\n  default: scripted\n  scripted:\n    replies: replies.yaml\n"
    )
    (root / "replies.yaml").write_text(
        json.dumps(
            {
                "tasks": {
                    "release": [
                        {"tool_calls": [{"name": "deploy", "arguments": {"version": "1.2"}}]},
                        "deployed",
                    ]
                }
            }
        )
    )
    (root / "subtasks/10_release/task.yaml").write_text("name: release\n")
    (root / "subtasks/10_release/instructions.md").write_text("Deploy 1.2.")
    (root / "subtasks/10_release/tools.md").write_text(TOOLS_MD)
    return root


def _state(server: PrefectServer, flow_run_id: UUID, names: set[str], timeout: float) -> Any:
    async def read(client: Any) -> Any:
        return await client.read_flow_run(flow_run_id)

    deadline = time.monotonic() + timeout
    run = with_client(server, read)
    while run.state.name not in names and time.monotonic() < deadline:
        time.sleep(0.25)
        run = with_client(server, read)
    return run


def test_a_tool_gate_suspends_mid_conversation_and_resumes_without_paying_again(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    server = prefect_server
    folder = _folder(tmp_path / "shipit")
    create_pool(server, POOL)
    ok(folpipe(server, "deploy", folder, "--name", "gate", "--pool", POOL))
    flow_run_id = trigger(server, "shipit/gate")
    run_worker_once(server, POOL, tmp_path / "worker-1.log")
    assert _state(server, flow_run_id, {"Suspended"}, 60).state.name == "Suspended"
    assert not (folder / "subtasks/10_release/deployed.txt").exists()

    listed = json.loads(ok(folpipe(server, "approvals", folder, "--json")).stdout)
    (gate,) = listed["waiting"]
    assert gate["flow_run_id"] == str(flow_run_id) and gate["question"] == "Deploy 1.2?"
    assert gate["target"] == "release · tool deploy"
    ok(folpipe(server, "approvals", "answer", str(flow_run_id), "approved=yes", "reason=go"))

    run_worker_once(server, POOL, tmp_path / "worker-2.log")
    done = _state(server, flow_run_id, {"Completed", "Failed", "Crashed"}, 60)
    assert done.state.name == "Completed", done.state
    assert (folder / "subtasks/10_release/deployed.txt").read_text() == "1.2"
    first, second = sorted(list_runs(folder), key=lambda r: str(r.get("started_at")))
    assert first["status"] == "suspended" and second["status"] == "completed"
    # the resumed run paid only for the call after the answer: the first came from the journal
    assert second["usage"]["model_calls"] == 1, second["usage"]
