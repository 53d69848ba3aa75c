"""One source of counts (issue 30 point 5): a run killed with SIGKILL, then resumed; the task
counts of ``folpipe status``, of the run summary (the artifact's description and rows), of
the line ``folpipe run`` prints and of the flow run's task runs read back from the API agree,
for the resumed run; the killed run is counted from its task runs."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from prefect_folpipe.compile.report import TaskCounts, count_tasks
from prefect_folpipe.deploy.taskruns import task_statuses
from prefect_folpipe.validate import load_workflow

from .test_faults import (
    _folpipe,
    _records,
    _release,
    _run_until_the_tool_runs,
    _status,
    _workflow,
)

pytestmark = pytest.mark.prefect


def _read(flow_run_id: str) -> tuple[Any, list[Any], list[Any]]:
    """The flow run, its task runs and its artifacts."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
    )

    async def read() -> tuple[Any, list[Any], list[Any]]:
        run_id = UUID(flow_run_id)
        async with get_client() as client:
            flow_run = await client.read_flow_run(run_id)
            task_runs = await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id]))
            )
            found = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
            )
            return flow_run, task_runs, found

    return asyncio.run(read())


def _from_task_runs(root: Path, flow_run_id: str, expected: TaskCounts) -> TaskCounts:
    """The counts of the flow run's task runs, polled until they are ``expected`` or 30 s
    pass (task runs are recorded from events)."""
    tree = load_workflow(root).root
    deadline = time.monotonic() + 30
    while True:
        flow_run, task_runs, _ = _read(flow_run_id)
        counts = count_tasks(task_statuses(task_runs, set(), tree, flow_run.state).values())
        if counts == expected or time.monotonic() > deadline:
            return counts
        time.sleep(0.5)


def test_status_summary_run_line_and_task_runs_agree_after_a_kill_and_a_resume(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = _workflow(tmp_path / "wf")
    proc = _run_until_the_tool_runs(cli_env, root)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed = _records(root)[-1]["flow_run_id"]

    _release(root)
    resumed = _folpipe({**cli_env, "COLUMNS": "200"}, "resume", root)
    assert resumed.returncode == 0, resumed.stderr
    flow_run_id = re.search(r"flow run ([0-9a-f-]{36})", resumed.stdout).group(1)  # type: ignore[union-attr]
    document = _records(root)[-1]
    assert document["flow_run_id"] == flow_run_id and document["status"] == "completed"
    counts = count_tasks(row["status"] for row in document["tasks"])
    assert (counts.total, counts.completed, counts.cached, counts.failed) == (4, 3, 1, 0)
    # the run line
    assert "1 of 4 tasks from checkpoints; 3 ran (--fresh to re-run)" in resumed.stdout

    # the summary artifact: its description and its rows
    _, _, artifacts = _read(flow_run_id)
    summary = next(a for a in artifacts if a.key == "faults-summary")
    assert summary.description.endswith(counts.line())
    assert count_tasks(row["status"] for row in json.loads(summary.data)) == counts

    # folpipe status: the resumed run and the killed one, each from its run document
    status = _status(cli_env, root, "--json")
    assert status.returncode == 0, status.stderr
    runs = {run["flow_run_id"]: run for run in json.loads(status.stdout)["runs"]}
    assert runs[flow_run_id]["tasks"] == counts.__dict__
    assert runs[flow_run_id]["counted_from"] == "summary"
    crashed = runs[killed]
    # a killed run's record is up to a second old: what Prefect holds of it is counted (its
    # task runs, as the UI shows them; those whose events died with the process are not there)
    assert crashed["state"] == "Crashed" and crashed["counted_from"] == "task runs"
    assert crashed["tasks"]["total"] == 4 and crashed["tasks"]["failed"] >= 1  # the root

    # the task runs the UI shows, read back per task, count the same
    assert _from_task_runs(root, flow_run_id, counts) == counts
    from_status = TaskCounts(**crashed["tasks"])
    assert _from_task_runs(root, killed, from_status).__dict__ == crashed["tasks"]
