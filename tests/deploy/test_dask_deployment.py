"""The ``deployments/dask`` example end to end: deployed with plain ``prefect deploy --all``
(the scheduler's address from ``FOLPIPE_DASK_ADDRESS`` at deploy time), run by a process
worker, its agent passes on a Dask LocalCluster the test starts (two worker processes)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .runs import create_pool, flow_run_states, ok, run_worker_once, task_run_states, trigger
from .server import PREFECT, PrefectServer

EXAMPLE = Path(__file__).parent.parent.parent / "deployments" / "dask"
SOURCES = ("docs", "issues", "forum", "changelog")
WHERE = """import json, os
from pathlib import Path


def run(ctx, task):
    folder = Path(ctx.workflow_root) / ".folpipe" / "where"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{task.name}.json").write_text(json.dumps({"pid": os.getpid()}))
"""

pytestmark = [pytest.mark.server, pytest.mark.timeout(600)]


def test_the_dask_example_runs_its_passes_on_the_cluster(
    prefect_server: PrefectServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    distributed = pytest.importorskip("distributed")
    server = prefect_server
    folder = tmp_path / "dask"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".folpipe"))
    for name in (*(f"10_sources/subtasks/{s}" for s in SOURCES), "20_merge"):
        hooks = folder / "subtasks" / name / "hooks"
        hooks.mkdir()
        (hooks / "post_run.py").write_text(WHERE)  # records which process ran the pass

    monkeypatch.setenv("PREFECT_API_URL", server.url)  # the cluster's workers report here
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with distributed.Client(cluster) as client:
            worker_pids = set(client.run(os.getpid).values())
        create_pool(server, "dask")
        address = {"FOLPIPE_DASK_ADDRESS": cluster.scheduler_address}  # read when deploying
        ok(server.run([PREFECT, "--no-prompt", "deploy", "--all"], cwd=folder, extra_env=address))
        run_id = trigger(server, "fanout/fanout", "topic=Dask on Prefect")
        run_worker_once(server, "dask", tmp_path / "worker.log")
    finally:
        cluster.close()

    assert flow_run_states(server, [run_id]) == {run_id: "Completed"}, (
        tmp_path / "worker.log"
    ).read_text()[-4000:]
    expected = {**{f"sources/{s}": "Completed" for s in SOURCES}, "sources": "Completed"}
    expected["merge"] = "Completed"
    assert task_run_states(server, run_id, expected) == expected
    ran_in = {
        file.stem: json.loads(file.read_text())["pid"]
        for file in (folder / ".folpipe" / "where").glob("*.json")
    }
    assert set(ran_in) == {*SOURCES, "merge"}
    assert set(ran_in.values()) <= worker_pids  # every pass ran in a worker of the cluster
