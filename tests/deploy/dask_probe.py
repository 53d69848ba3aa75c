"""Run a workflow folder through the Dask fan-out flow and print what happened as JSON.

Executed as a subprocess by test_dask.py so the Dask cluster lives and dies with it.
Usage: python dask_probe.py WORKFLOW_DIR
"""

from __future__ import annotations

import json
import os
import re
import sys
import time


def worker_pids(flow_run_id: object) -> dict[str, int]:
    """``{leaf path: pid}`` from the flow run's logs (shipped asynchronously: poll)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    pattern = re.compile(r"^(\S+) ran in Dask worker process (\d+)$")
    found: dict[str, int] = {}
    with get_client(sync_client=True) as client:
        for _ in range(30):
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
            found = {m[1]: int(m[2]) for log in logs if (m := pattern.match(log.message))}
            if len(found) == 4:
                break
            time.sleep(1)
    return found


def main(path: str) -> None:
    from prefect_folpipe.deploy.dask import fan_out_flow

    flow = fan_out_flow(path)
    started = time.monotonic()
    state = flow(return_state=True)
    elapsed = time.monotonic() - started
    context = state.result() if state.is_completed() else {}
    run_id = state.state_details.flow_run_id
    print(
        json.dumps(
            {
                "state": state.name,
                "flow_run_id": str(run_id),
                "worker_pids": worker_pids(run_id),
                "seconds": round(elapsed, 2),
                "probe_pid": os.getpid(),
                "context": {k: v for k, v in context.items() if not k.startswith("_")},
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
