"""Nothing outlives a killed run: a watchdog process that ends what this process started.

A shell tool or hook runs in a process group of its own (so a timeout kills all of it), and
Prefect's temporary server is a subprocess. When this process ends normally it stops them
itself; when it is killed outright (SIGKILL, OOM) nothing in it runs again. So the first time
it starts such a process it also starts a watchdog: a small Python process in a session of its
own, reading a pipe from this process. This process tells it which process groups and
processes to watch (``guard_group`` / ``guard_process``) and which are done (``release_*``).
When the pipe closes — this process is gone, however it died — the watchdog SIGKILLs the
process groups still listed and stops the processes (SIGTERM, then SIGKILL after a grace
period), then exits. A process is identified by its pid and start time, so a recycled pid is
never signalled.

Run as a script (``python -I watchdog.py``), this file is the watchdog itself: it imports only
the standard library and none of the package.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time

LOG = logging.getLogger("prefect_folpipe.tools")
GRACE_S = 5.0
"""How long a watched process (the temporary server) gets to stop after SIGTERM."""


def _started(pid: int) -> str | None:
    """The start time of ``pid`` (clock ticks since boot), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 else None


class Watchdog:
    """This process's side: starts the watchdog on first use, tells it what to watch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._failed = False
        if hasattr(os, "register_at_fork"):  # a forked child has no watchdog of its own
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._process = None
        self._failed = False

    def guard_group(self, pgid: int) -> None:
        """Kill process group ``pgid`` if this process dies before ``release_group``."""
        self._send(f"+G {pgid}")

    def release_group(self, pgid: int) -> None:
        self._send(f"-G {pgid}")

    def guard_process(self, pid: int) -> None:
        """Stop process ``pid`` if this process dies before ``release_process``."""
        self._send(f"+P {pid} {_started(pid) or '-'}")

    def release_process(self, pid: int) -> None:
        self._send(f"-P {pid}")

    @property
    def pid(self) -> int | None:
        """The watchdog's pid, once started (tests watch it)."""
        return self._process.pid if self._process is not None else None

    def _send(self, line: str) -> None:
        if os.name != "posix":  # pragma: no cover - process groups and /proc are POSIX
            return
        with self._lock:
            process = self._ensure()
            if process is None or process.stdin is None:
                return
            try:
                process.stdin.write(f"{line}\n".encode())
                process.stdin.flush()
            except OSError as exc:  # the watchdog died: processes may now outlive a kill
                LOG.warning("folpipe watchdog gone (%s); tools may outlive a killed run", exc)
                self._process, self._failed = None, True

    def _ensure(self) -> subprocess.Popen[bytes] | None:
        if self._process is not None or self._failed:
            return self._process
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", os.path.abspath(__file__), str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a signal to this process's group spares it
            )
        except OSError as exc:
            LOG.warning("could not start the folpipe watchdog: %s", exc)
            self._failed = True
        return self._process


WATCHDOG = Watchdog()


# ------------------------------------------------------------------------ the watchdog itself


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _stop_processes(processes: dict[int, str]) -> None:
    alive = {pid for pid, started in processes.items() if _started(pid) == started}
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = {pid for pid in alive if _started(pid) == processes[pid]}
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def watch(stream: object) -> None:
    """Read orders until the pipe closes, then end what is still listed."""
    groups: set[int] = set()
    processes: dict[int, str] = {}
    for raw in stream:  # type: ignore[attr-defined]
        parts = raw.decode(errors="replace").split()
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        order, number = parts[0], int(parts[1])
        if order == "+G":
            groups.add(number)
        elif order == "-G":
            groups.discard(number)
        elif order == "+P" and len(parts) > 2 and parts[2] != "-":
            processes[number] = parts[2]
        elif order == "-P":
            processes.pop(number, None)
    for pgid in groups:
        _kill_group(pgid)
    _stop_processes(processes)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the run, not for its watchdog
    watch(sys.stdin.buffer)
