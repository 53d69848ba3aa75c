"""Scale-out: a workflow's parallel leaves on Prefect's Dask task runner, against a real server."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from uuid import UUID

import pytest
from prefect_folpipe.deploy.dask import local_cluster_kwargs

from prefect_folpipe.workflow.tree import EffectiveSettings

from .server import PrefectServer
from .test_server_e2e import ok, task_run_states

FIXTURE = Path(__file__).parent.parent / "fixtures" / "deploy" / "fanout"
PROBE = Path(__file__).parent / "dask_probe.py"


def test_local_cluster_has_one_process_per_parallel_slot() -> None:
    kwargs = local_cluster_kwargs(EffectiveSettings(parallel_workers=3))
    assert kwargs == {
        "n_workers": 3,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }


@pytest.mark.server
@pytest.mark.timeout(400)
def test_parallel_leaves_run_on_dask_workers(prefect_server: PrefectServer, tmp_path: Path) -> None:
    workflow = tmp_path / "fanout"
    shutil.copytree(FIXTURE, workflow)

    def probe(folder: Path = workflow, mode: str = "sync") -> dict[str, object]:
        args = [sys.executable, str(PROBE), str(folder), mode]
        done = ok(prefect_server.run(args, timeout=240))
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = probe()
    assert first["state"] == "Completed"
    assert first["context"] == {f"shard_{s}": "shard summarised" for s in "abcd"}
    pids = first["worker_pids"]
    assert sorted(pids) == ["shard_a", "shard_b", "shard_c", "shard_d"]
    assert len(set(pids.values())) == 2  # parallel_workers: 2 worker processes
    assert first["probe_pid"] not in pids.values()  # not in the flow's own process
    run = UUID(str(first["flow_run_id"]))
    assert set(task_run_states(prefect_server, run, 4).values()) == {"Completed"}

    second = probe()  # checkpoints work through Dask too
    rerun = UUID(str(second["flow_run_id"]))
    assert task_run_states(prefect_server, rerun, 4) == {f"shard_{s}": "Cached" for s in "abcd"}


@pytest.mark.server
@pytest.mark.timeout(400)
def test_run_workflow_sends_leaves_to_dask_when_the_folder_says_so(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    workflow = tmp_path / "fanout"
    shutil.copytree(FIXTURE, workflow)

    def probe() -> dict[str, object]:
        args = [sys.executable, str(PROBE), str(workflow), "run"]
        done = ok(prefect_server.run(args, timeout=240))
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = probe()
    assert first["state"] == "completed"
    assert first["context"]["shard_a"] == "shard summarised"
    pids = first["worker_pids"]
    assert sorted(pids) == ["shard_a", "shard_b", "shard_c", "shard_d"]
    assert first["probe_pid"] not in pids.values()  # leaves ran in Dask worker processes

    second = probe()  # and their checkpoints are found on the next run
    assert {second["statuses"][f"shard_{s}"] for s in "abcd"} == {"cached"}


def test_dask_without_a_server_is_fp640() -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect_folpipe.deploy.dask import task_runner_for

    from prefect_folpipe.errors import ConfigError

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert task_runner_for(EffectiveSettings()) is None
        with pytest.raises(ConfigError) as excinfo:
            task_runner_for(EffectiveSettings(task_runner="dask"))
    assert excinfo.value.code == "FP640"
