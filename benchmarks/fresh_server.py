"""``--fresh-db``: every measured run of a scenario meets the same SQLite database.

A SQLite server records a run into a database that every earlier run made bigger, so the
same flow's recording time moved 1.4-2.8x between repetitions (12-03) and whichever flow ran
later paid for the others. With ``run_benchmarks.py --server sqlite --fresh-db`` the server
is stopped after a scenario's warm-up run, its database file copied aside, and before each
measured run the server is stopped, the copy put back and the server started again on the
same port (a new process; the benchmark then waits until it is idle, as between any runs).
The measuring process and its Prefect clients stay the same, so the ratios are still taken
side by side in one process.

The server was started by ``run_benchmarks.py`` (``tests/deploy/server.py``), which names it
in ``BENCH_SERVER_PID``, ``BENCH_SERVER_HOME`` and ``PREFECT_API_URL``; this module restarts
it and updates ``BENCH_SERVER_PID`` (``scale.server_processes`` reads it at each call).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.deploy.server import (
    PREFECT,
    _server_env,
    stop_process_group,
    wait_healthy,
)

SIDE_FILES = ("-wal", "-shm", "-journal")


def enabled() -> bool:
    return os.environ.get("BENCH_FRESH_DB") == "1"


def database() -> Path | None:
    """The SQLite file of the server ``run_benchmarks.py --server sqlite`` started, or None
    (a temporary or PostgreSQL server)."""
    home = os.environ.get("BENCH_SERVER_HOME")
    if os.environ.get("BENCH_SERVER") != "sqlite" or not home:
        return None
    return Path(home) / "prefect.db"


class FreshServer:
    """Stops, restores and restarts the SQLite server this process measures against."""

    def __init__(self) -> None:
        self.home = Path(os.environ["BENCH_SERVER_HOME"])
        path = database()
        assert path is not None, "--fresh-db needs --server sqlite"
        self.database = path
        self.url = os.environ["PREFECT_API_URL"]
        self.process: subprocess.Popen[bytes] | None = None  # ours, once restarted
        atexit.register(self._stop)

    def snapshot(self, name: str) -> None:
        """Keep the database as it is now (after the warm-up run) as ``name``."""
        self._stop()
        for suffix in ("", *SIDE_FILES):
            source = Path(f"{self.database}{suffix}")
            if source.exists():
                shutil.copy2(source, self._copy(name, suffix))
        self._start()

    def restore(self, name: str) -> None:
        """Restart the server on the database as it was when ``name`` was taken."""
        self._stop()
        grown = self.database.stat().st_size
        for suffix in ("", *SIDE_FILES):
            Path(f"{self.database}{suffix}").unlink(missing_ok=True)
            kept = self._copy(name, suffix)
            if kept.exists():
                shutil.copy2(kept, f"{self.database}{suffix}")
        self._start()
        print(
            f"# fresh_server: database {grown >> 20} MB -> {self.database.stat().st_size >> 20} MB"
            f" (snapshot {name}), server pid {os.environ['BENCH_SERVER_PID']}",
            file=sys.stderr,
            flush=True,
        )

    def _copy(self, name: str, suffix: str) -> Path:
        return self.home / f"snapshot-{name}.db{suffix}"

    def _stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process, grace_s=20.0)
            self.process = None
            return
        pid = int(os.environ["BENCH_SERVER_PID"])  # the first server: run_benchmarks.py's
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        _wait_closed(urlsplit(self.url).port or 0)

    def _start(self) -> None:
        port = str(urlsplit(self.url).port)
        env = _server_env(self.home, f"sqlite+aiosqlite:///{self.database}")
        log = self.home / "server.log"
        with log.open("ab") as handle:
            self.process = subprocess.Popen(
                [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", port],
                env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_healthy(self.url, self.process, log)
        os.environ["BENCH_SERVER_PID"] = str(self.process.pid)


def _wait_closed(port: int, limit_s: float = 30.0) -> None:
    """Until nothing accepts connections on ``port`` (the parent reaps the old server, not
    this process, so waiting on its PID would see a zombie)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the server on port {port} did not stop")


_SERVER: FreshServer | None = None


def server() -> FreshServer | None:
    """The fresh-database controller when ``--fresh-db`` is on, else ``None``."""
    global _SERVER
    if enabled() and _SERVER is None:
        _SERVER = FreshServer()
    return _SERVER
