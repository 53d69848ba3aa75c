"""Approval gates end to end on a real ``prefect server`` with a process worker.

A deployment's run reaches its gate and is suspended with a typed form: the worker's process
exits (no worker is held). The test answers through the API as the UI's form does; the run is
scheduled again, the worker runs it from the start, every task before the gate comes from its
checkpoint, and the answer is in the context. A second deployment's gate times out: Prefect
fails the run, its retry fails the gate (FP531) and the task's ``on_failure`` routes on.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from prefect_folpipe.compile.report._runs import list_runs, resumable_run

from .. import runs
from ..runs import create_pool, expand_restored, folpipe, ok, trigger, with_client
from ..server import PREFECT, PrefectServer

FIXTURE = Path(__file__).parent.parent.parent / "fixtures" / "deploy" / "approval"
POOL = "folpipe-approval"

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]

TIMING_OUT = """approval:
  prompt: "Ship release {{ context.version }}?"
  input: {approved: bool, comment: str}
  timeout: 3s
on_failure: use_default
default_output: {approved: false, comment: nobody answered}
"""


def run_worker_once(server: PrefectServer, log: Path, timeout: float = 300.0) -> None:
    """A process worker of this test's pool that runs every due flow run once, then exits."""
    runs.run_worker_once(server, POOL, log, timeout)


def _flow_run(server: PrefectServer, flow_run_id: UUID) -> Any:
    async def read(client: Any) -> Any:
        return await client.read_flow_run(flow_run_id)

    return with_client(server, read)


def _wait_state(server: PrefectServer, flow_run_id: UUID, names: set[str], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    run = _flow_run(server, flow_run_id)
    while run.state.name not in names and time.monotonic() < deadline:
        time.sleep(0.25)
        run = _flow_run(server, flow_run_id)
    return run


def _inputs(server: PrefectServer, flow_run_id: UUID) -> dict[str, Any]:
    """The flow run inputs the UI reads to draw the resume form (``{key: value}``)."""

    async def read(client: Any) -> dict[str, Any]:
        found = await client.filter_flow_run_input(
            flow_run_id=flow_run_id, key_prefix="suspended-", limit=20, exclude_keys=set()
        )
        return {item.key: item.decoded_value for item in found}

    return with_client(server, read)


TAGS: dict[str, tuple[str, ...]] = {}
"""The tags of the task runs ``_task_runs`` read, by name (a restore is read from them)."""


def _task_runs(
    server: PrefectServer, flow_run_id: UUID, until: Callable[[list[tuple[str, str]]], bool]
) -> list[tuple[str, str]]:
    """``(name, state)`` of the flow run's task runs once ``until`` holds for them (task runs
    are recorded from events, a moment later), or what is there after 60 s."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read(client: Any) -> list[tuple[str, str]]:
        runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
        TAGS.update({run.name: tuple(run.tags or ()) for run in runs})
        return sorted((run.name, run.state.name) for run in runs if run.state)

    deadline = time.monotonic() + 60
    found = with_client(server, read)
    while not until(found) and time.monotonic() < deadline:
        time.sleep(0.5)
        found = with_client(server, read)
    return found


def _evidence(workflow: Path, flow_run_id: UUID) -> dict[str, Any]:
    record = workflow / ".folpipe" / "evidence" / f"{flow_run_id}.json"
    return json.loads(record.read_text())["context"]


def test_a_deployment_run_waits_for_approval_without_holding_a_worker(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    server = prefect_server
    create_pool(server, POOL)
    answered = tmp_path / "answered"
    shutil.copytree(FIXTURE, answered)
    unanswered = tmp_path / "unanswered"
    shutil.copytree(FIXTURE, unanswered)
    (unanswered / "subtasks/20_ship/task.yaml").write_text(TIMING_OUT)
    for folder, name in ((answered, "answered"), (unanswered, "unanswered")):
        ok(folpipe(server, "deploy", folder, "--name", name, "--pool", POOL))
    waiting = trigger(server, "release/answered")
    expiring = trigger(server, "release/unanswered")

    # 1. both runs reach their gate and are suspended; the worker's processes exit
    run_worker_once(server, tmp_path / "worker-1.log")
    suspended = _flow_run(server, waiting)
    assert suspended.state.name == "Suspended", suspended.state
    assert _flow_run(server, expiring).state.type.value in ("PAUSED", "FAILED")  # 3 s only
    form = _inputs(server, waiting)
    description = next(v for k, v in form.items() if k.endswith("-description"))
    schema = next(v for k, v in form.items() if k.endswith("-schema"))
    assert "Ship release 1.2 (b42)?" in description
    assert schema["properties"]["approved"]["type"] == "boolean"
    assert schema["properties"]["comment"]["type"] == "string"
    assert set(schema["required"]) == {"approved", "comment"}
    built = [("build", "Completed")]
    assert _task_runs(server, waiting, lambda found: found == built) == built
    # a suspended run is not an interrupted one: `folpipe resume` leaves it to Prefect
    assert [(r["status"], r["flow_run_id"]) for r in list_runs(answered)] == [
        ("suspended", str(waiting))
    ]
    assert resumable_run(answered) is None

    # 2. answer as the UI's form does: resume with the run input
    async def answer(client: Any) -> Any:
        return await client.resume_flow_run(
            waiting, run_input={"approved": True, "comment": "ship it"}
        )

    assert with_client(server, answer).status.value == "ACCEPT"
    # meanwhile the other gate's 3 s pass: Prefect fails that run
    expired = _wait_state(server, expiring, {"Failed"}, timeout=60)
    assert expired.state.name == "Failed", expired.state
    ok(server.run([PREFECT, "flow-run", "retry", str(expiring)]))

    # 3. the worker runs both again from the start
    run_worker_once(server, tmp_path / "worker-2.log")
    done = _wait_state(server, waiting, {"Completed", "Failed", "Crashed"}, timeout=60)
    assert done.state.name == "Completed", done.state
    seen = _evidence(answered, waiting)
    assert (seen["approved"], seen["comment"]) == (True, "ship it")
    assert seen["artifact"] == "b42" and seen["announce"] == "done"
    builds = (answered / ".folpipe" / "evidence" / "build.log").read_text().split()
    assert builds == [str(waiting)], "build ran once: the resumed run took its checkpoint"

    def restored(found: list[tuple[str, str]]) -> bool:
        return expand_restored(dict(found), ["build"], TAGS).get("build") == "Cached"

    assert restored(_task_runs(server, waiting, restored))
    assert list((answered / ".folpipe" / "results" / "approvals").glob("ship-*.json"))
    assert [r["status"] for r in list_runs(answered)] == ["suspended", "completed"]

    retried = _wait_state(server, expiring, {"Completed", "Failed", "Crashed"}, timeout=60)
    assert retried.state.name == "Completed", retried.state
    seen = _evidence(unanswered, expiring)
    assert (seen["approved"], seen["comment"]) == (False, "nobody answered")
    assert "FP531" in seen["_errors"][0]["error"]
    assert "announce" not in seen
