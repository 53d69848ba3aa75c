"""Timing one run, and waiting between runs until the Prefect server has recorded the last one.

A server records a run's events for seconds after the run returns (a 1,000-task run: tens of
seconds on SQLite); a measurement started sooner pays for that backlog. So every measurement
is preceded by :func:`settle`: a fixed pause, then until the server's CPU is idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil


@dataclass
class Settle:
    """How long :func:`settle` waits: ``pause_s``, then until the server's CPU used under
    ``idle_cpu`` seconds in one second, at most ``limit_s``. ``server_pid``: the server's
    process (None: a temporary server, a child of this process)."""

    pause_s: float = 12.0
    limit_s: float = 180.0
    idle_cpu: float = 0.1
    server_pid: int | None = None


SETTLE = Settle()


def settle() -> None:
    """Wait until the server has finished recording earlier runs (see :class:`Settle`)."""
    time.sleep(SETTLE.pause_s)
    deadline = time.monotonic() + SETTLE.limit_s
    while time.monotonic() < deadline:
        processes = _server_processes()
        before = _cpu(processes)
        time.sleep(1.0)
        if _cpu(processes) - before < SETTLE.idle_cpu:
            return


def _server_processes() -> list[psutil.Process]:
    root = psutil.Process(SETTLE.server_pid) if SETTLE.server_pid else psutil.Process()
    found = [root] if SETTLE.server_pid else []
    with contextlib.suppress(psutil.Error):
        found += root.children(recursive=True)
    return found


def _cpu(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of ``fn()`` and its value."""
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def run_folpipe(folder: Path, **options: Any) -> tuple[float, Any]:
    """Wall seconds of one ``run_workflow`` until it returns, and its result; then waits for
    the background writer's reports (``result.reports_after_s``: how much longer they took)."""
    from prefect_folpipe.compile import RunOptions, flush_artifacts, run_workflow

    seconds, result = timed(lambda: run_workflow(folder, options=RunOptions(**options)))
    result.reports_after_s, _ = timed(flush_artifacts)
    if result.status != "completed":
        raise RuntimeError(f"folpipe's run of {folder} {result.status}: {result.error}")
    return seconds, result


def run_flow(flow_call: Callable[[], Awaitable[Any]]) -> float:
    """Wall seconds of one hand-written (async) flow run."""
    seconds, _ = timed(lambda: asyncio.run(flow_call()))
    return seconds


def run_process(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    """Wall seconds of ``cmd`` in a new process (it must succeed)."""
    seconds, done = timed(
        lambda: subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-1500:]}")
    return seconds


def process_env(scratch: Path, **extra: str) -> dict[str, str]:
    """This process's environment with a bytecode cache folder, as an installed package has
    (a machine may set PYTHONDONTWRITEBYTECODE=1, which recompiles every module each time)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(scratch / "pycache"), **extra}
