"""Run a workflow folder twice with ``run_workflow`` and print what happened as one JSON line.

Executed as a subprocess by test_dask.py (against the session's Prefect server), so a Dask
cluster lives and dies with it. Usage: ``python dask_probe.py WORKFLOW_DIR [RUNS]``. For each
run: the run document, and per task run (read back from the API) its state, run count and the
delay Prefect scheduled before each retry; then the checkpoint files (named by cache key).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.records, run as a script


async def task_runs(flow_run_id: str, expected: int) -> list[dict[str, Any]]:
    """Every task run of the flow run (nested ones included) once all are final."""
    from prefect.client.orchestration import get_client

    from tests.records import recorded_task_runs

    runs = await recorded_task_runs(flow_run_id, count=expected, timeout=30)
    async with get_client() as client:
        return [await describe(client, run) for run in runs]


async def describe(client: Any, run: Any) -> dict[str, Any]:
    states = await client.read_task_run_states(run.id)
    delays = [
        round((state.state_details.scheduled_time - state.timestamp).total_seconds(), 2)
        for state in states
        if state.name == "AwaitingRetry" and state.state_details.scheduled_time
    ]
    return {
        "name": run.name,
        "state": run.state_name,
        "run_count": run.run_count,
        "retry_delays": delays,
    }


def main(path: str, runs: int) -> None:
    from prefect_folpipe import run_workflow

    report = []
    for _ in range(runs):
        result = run_workflow(path)
        document = result.to_dict()
        expected = sum(1 for row in document["tasks"] if row["path"] and row["attempts"])
        report.append(
            {
                "run": document,
                "task_runs": asyncio.run(task_runs(str(result.flow_run_id), expected)),
            }
        )
    results = Path(path) / ".folpipe" / "results"
    files = sorted(file.name for file in results.iterdir()) if results.is_dir() else []
    keys = [name for name in files if "-" in name]  # folpipe's keys: <task slug>-<sha256>
    print(json.dumps({"probe_pid": os.getpid(), "runs": report, "cache_keys": keys}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
