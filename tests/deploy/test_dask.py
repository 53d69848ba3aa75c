"""Runner parity: one workflow on the local runner and on a Dask LocalCluster of two worker
processes, against a real Prefect server, with the same results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.dask import local_cluster_kwargs
from prefect_folpipe.compile.runner import Runners
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.plan import DaskPlan, build_plan
from prefect_folpipe.validate import load_workflow

from .runs import ok
from .server import PrefectServer, stop_process_group

FIXTURES = Path(__file__).parent.parent / "fixtures" / "deploy"
EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "research_report"
PROBE = Path(__file__).parent / "dask_probe.py"
SECRET = "parity-probe-key"
SECRET_VALUE = "sk-parity-7f3e"


def test_local_cluster_has_one_process_per_parallel_slot() -> None:
    assert local_cluster_kwargs(3) == {
        "n_workers": 3,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }


@pytest.mark.slow
def test_dask_without_a_server_is_fp640(tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    workflow = _copy(FIXTURES / "parity", tmp_path / "dasks", dask=True)
    runners = Runners(build_plan(load_workflow(workflow)))
    with (
        temporary_settings(restore_defaults={PREFECT_API_URL}),
        pytest.raises(ConfigError) as caught,
    ):
        runners.check()
    assert caught.value.code == "FP640"


def test_one_run_uses_one_cluster() -> None:
    from prefect_folpipe.compile.dask import dask_task_runner

    with pytest.raises(ConfigError, match="one"):
        dask_task_runner(DaskPlan(None, 2, problem="tasks name different clusters; a run uses one"))


def _copy(source: Path, parent: Path, *, dask: bool) -> Path:
    """The fixture under ``parent`` (same path length for both runners: prompts hold paths)."""
    target = parent / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".folpipe", "__pycache__"))
    if dask:
        config = target / "task.yaml"
        text = config.read_text(encoding="utf-8")
        config.write_text(text.replace("settings:\n", "settings:\n  task_runner: dask\n", 1))
    return target


def _probe(server: PrefectServer, workflow: Path, runs: int = 2) -> dict[str, Any]:
    args = [sys.executable, str(PROBE), str(workflow), str(runs)]
    done = ok(server.run(args, timeout=240))
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _probes(server: PrefectServer, logs: dict[Path, Path], runs: int = 2) -> list[dict[str, Any]]:
    """:func:`_probe` of each workflow of ``logs`` (its probe log: the value), the processes
    running at the same time (each waits for its server, its retries, its cluster)."""
    started = [
        subprocess.Popen(
            [sys.executable, str(PROBE), str(workflow), str(runs)],
            env={**server.env, "FOLPIPE_PROBE_LOG": str(log)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for workflow, log in logs.items()
    ]
    found = []
    for process in started:
        try:
            out, err = process.communicate(timeout=240)
        finally:
            stop_process_group(process)
        assert process.returncode == 0, f"{process.args}\nstdout:\n{out}\nstderr:\n{err}"
        found.append(json.loads(out.strip().splitlines()[-1]))
    return found


@pytest.fixture
def probe_server(prefect_server: PrefectServer, tmp_path: Path) -> PrefectServer:
    """The session server with the probe provider importable and the Secret block saved."""
    env = {
        **prefect_server.env,
        "PYTHONPATH": os.pathsep.join([str(FIXTURES / "parity"), os.environ.get("PYTHONPATH", "")]),
        "FOLPIPE_PROBE_LOG": str(tmp_path / "probe.log"),
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    from prefect.blocks.system import Secret
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_server.url}):
        Secret(value=SECRET_VALUE).save(SECRET, overwrite=True)
    return PrefectServer(prefect_server.url, prefect_server.home, env, prefect_server.process)


def _rows(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    keys = ("status", "attempts", "iterations", "model_calls", "tool_calls", "usage", "error")
    return {row["path"]: {key: row[key] for key in keys} for row in run["tasks"]}


def _context(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run["context"].items() if not k.startswith(("pid_", "_env"))}


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.server
@pytest.mark.timeout(400)
def test_the_local_and_the_dask_runner_give_the_same_run(
    probe_server: PrefectServer, tmp_path: Path
) -> None:
    local_log, dask_log = tmp_path / "local.probe.log", tmp_path / "dasks.probe.log"
    local, dask = _probes(
        probe_server,
        {
            _copy(FIXTURES / "parity", tmp_path / "local", dask=False): local_log,
            _copy(FIXTURES / "parity", tmp_path / "dasks", dask=True): dask_log,
        },
    )
    local_calls, dask_calls = _calls(local_log), _calls(dask_log)

    for first, second in zip(local["runs"], dask["runs"], strict=True):
        assert _context(first["run"]) == _context(second["run"])  # final contexts
        assert _rows(first["run"]) == _rows(second["run"])  # statuses, attempts, usage, errors
        assert first["run"]["usage"] == second["run"]["usage"]
    assert local["cache_keys"] == dask["cache_keys"]  # checkpoint files are named by key
    assert len([key for key in dask["cache_keys"] if key.startswith("write-draft")]) == 2

    run = _rows(dask["runs"][0]["run"])
    assert run[""]["status"] == "completed"
    assert _context(dask["runs"][0]["run"])["text"] == "a short draft"  # one reply cursor
    assert run["write"]["iterations"] == 2
    # a transient provider error is retried after its delay; an author error is not retried
    assert run["checks/flaky"] == {**run["checks/flaky"], "status": "completed", "attempts": 2}
    assert run["checks/strict"]["attempts"] == 1 and "FP312" in run["checks/strict"]["error"]
    # the branch's token budget stops the second call, as in one process
    assert run["checks/budget/spender"]["model_calls"] == 1
    assert "FP330" in run["checks/budget/spender"]["error"]
    for result in (local, dask):
        task_runs = {tr["name"]: tr for tr in result["runs"][0]["task_runs"]}
        assert task_runs["checks/flaky"]["retry_delays"] == pytest.approx([1.0], abs=0.1)
        assert task_runs["checks/strict"]["run_count"] == 1

    # the second run reuses every checkpoint on both runners. The budget-stopped spender has
    # no checkpoint: its paid call comes back from its journal, free and outside the budget
    # (docs/durability.md), so its second call fits the budget now, on both runners alike;
    # the shards after it see its answer and run again
    again = _rows(dask["runs"][1]["run"])
    for result in (local, dask):
        rows = result["runs"][1]["run"]["tasks"]
        spender = next(row for row in rows if row["path"] == "checks/budget/spender")
        assert (spender["status"], spender["model_calls"], spender["replayed_calls"]) == (
            "completed", 1, 1,
        )  # fmt: skip
    downstream = {"shards/shard_a", "shards/shard_b"}
    executed = [
        path for path, row in run.items() if row["status"] == "completed" and row["attempts"]
    ]
    assert executed and all(
        again[path]["status"] == "cached" for path in executed if path not in downstream
    )

    # leaves ran in two worker processes, not in the flow's
    pids = {v for k, v in dask["runs"][0]["run"]["context"].items() if k.startswith("pid_")}
    assert len(pids) == 2 and dask["probe_pid"] not in pids
    local_pids = {v for k, v in local["runs"][0]["run"]["context"].items() if k.startswith("pid_")}
    assert local_pids == {local["probe_pid"]}

    # rate limit (max_concurrent: 1) held across processes; the Secret block's key resolved
    # where the provider was built (a Dask worker)
    for calls in (local_calls, dask_calls):
        spans = sorted((call["start"], call["end"]) for call in calls)
        assert len(spans) == 2 and spans[0][1] <= spans[1][0]
    assert {call["pid"] for call in dask_calls} != {dask["probe_pid"]}
    assert _context(dask["runs"][0]["run"])["ask_a"] == f"key ends {SECRET_VALUE[-4:]}"


@pytest.mark.server
@pytest.mark.timeout(400)
def test_the_example_completes_on_dask(probe_server: PrefectServer, tmp_path: Path) -> None:
    workflow = _copy(EXAMPLE, tmp_path / "dasks", dask=True)
    result = _probe(probe_server, workflow, runs=1)["runs"][0]["run"]
    assert result["status"] == "completed"
    assert result["context"]["approved"] is True
    assert result["context"]["title"] == "Agents in production"
    assert {row["status"] for row in result["tasks"]} == {"completed"}
