"""A ``prefect server start`` of the benchmark's own, on SQLite or on a given database URL.

A new SQLite database is migrated on the server's first start (30-45 s on a busy 2-core
machine); the first migrated database is kept, per Prefect version, in the user's cache folder
and copied into every later server's home, so a server starts in seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import httpx

PREFECT = str(Path(sys.executable).parent / "prefect")
STARTUP_TIMEOUT_S = 180.0
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "folpipe-bench"


@dataclass
class Server:
    """A running server: its API URL, home folder and process."""

    url: str
    home: Path
    process: subprocess.Popen[bytes]
    startup_s: float = 0.0

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL if it lingers, remove its home;
        idempotent."""
        if self.process.poll() is None:
            self._terminate()
        shutil.rmtree(self.home, ignore_errors=True)

    def _terminate(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=20)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _template() -> Path:
    return CACHE / f"prefect-{version('prefect')}.db"


def start(database_url: str | None = None) -> Server:
    """Start a server and wait until it answers; ``database_url`` (Prefect's SQLAlchemy URL)
    defaults to a SQLite file in a new home folder."""
    home = Path(tempfile.mkdtemp(prefix="folpipe-bench-server-"))
    database = home / "prefect.db"
    template = _template()
    if database_url is None and template.exists():
        shutil.copyfile(template, database)
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_API_DATABASE_CONNECTION_URL=database_url or f"sqlite+aiosqlite:///{database}",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
    )
    for name in ("PREFECT_SERVER_DATABASE_TIMEOUT", "PREFECT_SERVER_DATABASE_CONNECTION_TIMEOUT"):
        env.setdefault(name, "60")  # a loaded machine: wait for the database, not answer 503
    log = home / "server.log"
    began = time.monotonic()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    server = Server(url, home, process)
    atexit.register(server.stop)
    _wait_healthy(server, log)
    server.startup_s = time.monotonic() - began
    if database_url is None and not template.exists():
        _keep_template(database, template)
    return server


def _wait_healthy(server: Server, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"prefect server exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.url}/health", timeout=2.0).status_code == 200:
                return
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"prefect server not healthy in {STARTUP_TIMEOUT_S:.0f} s")


def _keep_template(database: Path, template: Path) -> None:
    """Copy the freshly migrated database (SQLite's backup: safe while the server has it open)."""
    template.parent.mkdir(parents=True, exist_ok=True)
    partial = template.with_suffix(".partial")
    source, copy = sqlite3.connect(database), sqlite3.connect(partial)
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    partial.replace(template)
