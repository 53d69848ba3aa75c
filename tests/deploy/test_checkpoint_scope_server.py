"""Checkpoint scope against a real ``prefect server`` with a process worker (issue 12, point 3).

* a deployment's runs re-run every task (a schedule must not replay last night's results);
* they reuse checkpoints across runs only when the run (``reuse_checkpoints``) or the
  workflow (``settings.cache: {across_runs: true, ttl: 1d}``) opts in, and ``fresh`` still
  re-runs then;
* within one flow run's lineage they are always reused: the UI's Retry of a failed run runs
  only what failed (``folpipe resume`` through the API: ``test_server_e2e.py``);
* local runs against the same server reuse them across runs (the dev loop).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .runs import (
    copy_workflow,
    create_pool,
    flow_run_states,
    folpipe,
    ok,
    retry_like_the_ui,
    run_worker_once,
    task_run_states,
    trigger,
)
from .server import PrefectServer

POOL = "folpipe-scope"
DONE = {"research": "Completed", "write": "Completed"}
CACHED = {"research": "Cached", "write": "Cached"}

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]


def deploy(server: PrefectServer, folder: Path, name: str) -> str:
    args = ["deploy", str(folder), "--name", name, "--pool", POOL, "--param", "topic=scope"]
    return json.loads(ok(folpipe(server, *args, "--json")).stdout)["full_name"]


def test_deployment_runs_are_fresh_unless_they_opt_in(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    server = prefect_server
    create_pool(server, POOL)
    plain, opted, doomed = (copy_workflow(tmp_path, n) for n in ("plain", "opted", "doomed"))
    with (opted / "task.yaml").open("a") as handle:
        handle.write("\nsettings:\n  cache: {across_runs: true, ttl: 1d}\n")
    marker = doomed / ".folpipe" / "fail-write"
    marker.parent.mkdir()
    marker.touch()
    names = {folder.name: deploy(server, folder, folder.name) for folder in (plain, opted, doomed)}

    first = trigger(server, names["plain"])
    reuse_first = trigger(server, names["plain"], "reuse_checkpoints=true")
    opted_first = trigger(server, names["opted"])
    failed = trigger(server, names["doomed"])
    run_worker_once(server, POOL, tmp_path / "worker-1.log")
    states = flow_run_states(server, [first, reuse_first, opted_first, failed])
    assert list(states.values()) == ["Completed", "Completed", "Completed", "Failed"]
    doomed_states = {"research": "Completed", "write": "Failed"}
    assert task_run_states(server, failed, doomed_states) == doomed_states

    marker.unlink()
    retry_like_the_ui(server, failed)
    again = trigger(server, names["plain"])
    reuse_again = trigger(server, names["plain"], "reuse_checkpoints=true")
    fresh_anyway = trigger(server, names["plain"], "reuse_checkpoints=true", "fresh=true")
    opted_again = trigger(server, names["opted"])
    run_worker_once(server, POOL, tmp_path / "worker-2.log")
    later = [again, reuse_again, fresh_anyway, opted_again, failed]
    assert set(flow_run_states(server, later).values()) == {"Completed"}

    # same inputs as the first run, but a deployment run re-runs every task ...
    assert task_run_states(server, again, DONE) == DONE
    # ... unless the run opts in (its parameter) or the workflow does (settings.cache)
    assert task_run_states(server, reuse_again, CACHED) == CACHED
    assert task_run_states(server, opted_again, CACHED) == CACHED
    # fresh re-runs even then
    assert task_run_states(server, fresh_anyway, DONE) == DONE
    # the UI's Retry: the same flow run, what it finished comes back from checkpoints
    retried = {"research": "Cached", "write": "Completed"}
    assert task_run_states(server, failed, retried) == retried


def test_local_runs_against_a_server_reuse_checkpoints_across_runs(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    folder = copy_workflow(tmp_path, "local")
    args = ["run", str(folder), "--context", '{"topic": "dev loop"}']
    first = ok(folpipe(prefect_server, *args))
    assert "from checkpoints" not in first.stdout
    second = ok(folpipe(prefect_server, *args))
    assert "3 of 3 tasks from checkpoints (--fresh to re-run)" in second.stdout
    fresh = ok(folpipe(prefect_server, *args, "--fresh"))
    assert "from checkpoints" not in fresh.stdout
