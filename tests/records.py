"""Reading what Prefect recorded about a run: task runs arrive as events, so reads poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any


async def recorded_task_runs(
    flow_run_id: Any, count: int = 0, names: Iterable[str] = (), timeout: float = 60
) -> list[Any]:
    """The flow run's task runs once at least ``count`` of them, every one of ``names``, and
    every run's final state are recorded (or what is there after ``timeout`` seconds)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    wanted = set(names)
    only = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    async with get_client() as client:
        deadline = time.monotonic() + timeout
        while True:
            runs = await client.read_task_runs(flow_run_filter=only)
            if _complete(runs, count, wanted) or time.monotonic() > deadline:
                return runs
            await asyncio.sleep(0.1)


def _complete(runs: list[Any], count: int, wanted: set[str]) -> bool:
    return (
        len(runs) >= count
        and wanted <= {r.name for r in runs}
        and all(r.state and r.state.is_final() for r in runs)
    )
