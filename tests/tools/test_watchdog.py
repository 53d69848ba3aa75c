"""The watchdog (issue 11 point 10): what a process guards dies with it, even on SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)"),
]  # slow: processes that must die, seconds each

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from prefect_folpipe.tools.watchdog import WATCHDOG

    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    group = subprocess.Popen(["sleep", "60"], start_new_session=True, **quiet)
    server = subprocess.Popen(["sleep", "61"], **quiet)
    released = subprocess.Popen(["sleep", "62"], start_new_session=True, **quiet)
    WATCHDOG.guard_group(group.pid)
    WATCHDOG.guard_process(server.pid)
    WATCHDOG.guard_group(released.pid)
    WATCHDOG.release_group(released.pid)
    print(group.pid, server.pid, released.pid, WATCHDOG.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_sigkilled_process_takes_what_it_guarded_with_it() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    group, server, released, watchdog = map(int, parent.stdout.readline().split())
    try:
        assert all(_alive(pid) for pid in (group, server, released, watchdog))
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert _wait_gone(group, 10), "the guarded process group outlived its parent"
        assert _wait_gone(server, 10), "the guarded process outlived its parent"
        assert _wait_gone(watchdog, 10), "the watchdog lingers"
        assert _alive(released), "a released group was killed"
    finally:
        for pid in (group, server, released):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_normal_exit_leaves_nothing_behind_and_kills_nothing_released() -> None:
    code = PARENT.replace("time.sleep(120)", "")
    parent = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    group, server, released, watchdog = map(int, parent.stdout.split())
    try:
        assert _wait_gone(watchdog, 10)
        assert _wait_gone(group, 10) and _wait_gone(server, 10)  # still guarded at exit
        assert _alive(released)
    finally:
        for pid in (group, server, released):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
