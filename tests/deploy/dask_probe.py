"""Run a workflow folder through the Dask fan-out flow and print what happened as JSON.

Executed as a subprocess by test_dask.py so the Dask cluster lives and dies with it.
Usage: python dask_probe.py WORKFLOW_DIR [sync|async|run]   (run: the product path,
``run_workflow`` with the folder's ``settings.task_runner: dask``)
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
            if len(found) == 4 or "async" in sys.argv:
                break
            time.sleep(1)
    return found


def async_flow(path: str) -> object:
    """An async flow awaiting ``run_on_dask`` for each leaf, as the compile executor would."""
    import asyncio
    from pathlib import Path

    from prefect import Flow
    from prefect_folpipe.deploy.dask import _load, dask_task_runner, run_on_dask

    root = Path(path).resolve()
    workflow = _load(str(root))

    async def folpipe_async_fan_out() -> dict[str, str]:
        states = await asyncio.gather(
            *(run_on_dask(leaf, root, {}) for leaf in workflow.root.children)
        )
        return {
            leaf.path: state.name
            for leaf, state in zip(workflow.root.children, states, strict=True)
        }

    return Flow(
        folpipe_async_fan_out,
        name="fanout-async",
        task_runner=dask_task_runner(workflow.root.settings),
    )


def product_run(path: str) -> None:
    """``run_workflow`` as ``folpipe run`` does it: the task runner comes from the folder."""
    from prefect_folpipe import run_workflow

    result = run_workflow(path)
    print(
        json.dumps(
            {
                "state": result.status,
                "flow_run_id": str(result.flow_run_id),
                "worker_pids": worker_pids(result.flow_run_id),
                "probe_pid": os.getpid(),
                "context": {k: v for k, v in result.context.items() if not k.startswith("_")},
                "statuses": {t["path"]: t["status"] for t in result.to_dict()["tasks"]},
            }
        )
    )


def main(path: str, mode: str) -> None:
    from prefect_folpipe.deploy.dask import fan_out_flow

    if mode == "run":
        product_run(path)
        return
    flow = async_flow(path) if mode == "async" else fan_out_flow(path)
    started = time.monotonic()
    state = flow(return_state=True)
    if mode == "async":
        import asyncio

        state = asyncio.run(state)
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
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sync")
