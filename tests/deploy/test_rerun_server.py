"""``folpipe resume --flow-run ID --from TASK`` against a real ``prefect server`` on SQLite
(Prefect's default database) and a process worker: a deployment's run re-run from a task,
through the API, on the run's work pool."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

import pytest

from .runs import (
    copy_workflow,
    create_pool,
    flow_run_states,
    folpipe,
    ok,
    run_worker_once,
    task_run_states,
    trigger,
    with_client,
)
from .server import PrefectServer

POOL = "folpipe-rerun"
DONE = {"research": "Completed", "write": "Completed"}

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]


def test_a_deployment_run_re_run_from_a_task_through_the_api(
    prefect_sqlite_server: PrefectServer, tmp_path: Path
) -> None:
    server = prefect_sqlite_server  # Prefect's default database: a deployment run on SQLite
    create_pool(server, POOL)
    folder = copy_workflow(tmp_path, "rerun")
    args = ["deploy", str(folder), "--name", "rerun", "--pool", POOL, "--param", "topic=again"]
    name = json.loads(ok(folpipe(server, *args, "--json")).stdout)["full_name"]

    first = trigger(server, name)
    run_worker_once(server, POOL, tmp_path / "worker-1.log")
    assert flow_run_states(server, [first]) == {first: "Completed"}
    assert task_run_states(server, first, DONE) == DONE

    command = ["resume", str(folder), "--flow-run", str(first), "--from", "write"]
    created = json.loads(ok(folpipe(server, *command, "--json")).stdout)
    assert created["resumed"] == "api" and created["rerun_of"] == str(first)
    assert created["work_pool"] == POOL and created["from"] == ["write"]
    again = UUID(created["flow_run_id"])
    assert again != first

    async def parameters(client):  # type: ignore[no-untyped-def]
        return (await client.read_flow_run(again)).parameters

    given = with_client(server, parameters)
    assert given["rerun_from"] == ["write"] and given["restore_from"] == str(first)
    assert given["topic"] == "again"

    run_worker_once(server, POOL, tmp_path / "worker-2.log")
    log = (tmp_path / "worker-2.log").read_text()[-6000:]
    assert flow_run_states(server, [again]) == {again: "Completed"}, log
    rerun = {"research": "Cached", "write": "Completed"}
    assert task_run_states(server, again, rerun) == rerun

    # the deployment parameters themselves: any run may say them
    direct = trigger(server, name, 'rerun_from=["write"]', f"restore_from={first}")
    run_worker_once(server, POOL, tmp_path / "worker-3.log")
    assert flow_run_states(server, [direct]) == {direct: "Completed"}
    assert task_run_states(server, direct, rerun) == rerun

    unknown = folpipe(server, *command[:-1], "nope", "--json")
    assert unknown.returncode == 2 and "FP405" in unknown.stdout
