"""Probe: what one markdown artifact costs a Prefect server (issue 15's report tail).

    .venv/bin/python benchmarks/artifact_cost.py [--count 300]

Starts a SQLite ``prefect server`` of its own (tests/deploy/server.py), creates ``--count``
artifacts 4 at a time (folpipe's report writer runs 4), keyed and then unkeyed, and prints
the wall time and the server's CPU per artifact, during the burst and in the 8 s after it
(events the server digests later).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.deploy.server import start_server

REPORT = "# report\n" + "x" * 700  # about the size of a folpipe task report


def server_cpu(process: psutil.Process) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in [process, *process.children(recursive=True)])


async def burst(count: int, keyed: bool, prefix: str, workers: int = 4) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import ArtifactCreate

    async with get_client() as client:
        slots = asyncio.Semaphore(workers)

        async def one(index: int) -> None:
            key = f"{prefix}-{index}" if keyed else None
            async with slots:
                await client.create_artifact(ArtifactCreate(key=key, type="markdown", data=REPORT))

        await asyncio.gather(*(one(i) for i in range(count)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300)
    count = parser.parse_args().count
    server = start_server()
    os.environ["PREFECT_API_URL"] = server.url
    try:
        process = psutil.Process(server.process.pid)
        asyncio.run(burst(20, True, "warm-up"))
        time.sleep(5)
        for keyed in (True, False):
            cpu, started = server_cpu(process), time.perf_counter()
            asyncio.run(burst(count, keyed, f"probe-{keyed}".lower()))
            wall, during = time.perf_counter() - started, server_cpu(process) - cpu
            time.sleep(8)
            after = server_cpu(process) - cpu - during
            print(
                f"keyed={keyed}: {wall / count * 1e3:.1f} ms wall, server CPU "
                f"{during / count * 1e3:.1f} ms during + {after / count * 1e3:.1f} ms after"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
