"""A real ``prefect server start`` process for deployment tests, and the processes around it.

One server per test session and database (SQLite in a temporary PREFECT_HOME by default, or
the PostgreSQL URL given to :func:`start_server`; analytics off, a free port on 127.0.0.1).
Every process started through :meth:`PrefectServer.spawn` (workers, ``serve``) runs in its own
process group and is stopped by PID when the session ends, also on failure; the server itself
is stopped last.
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
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

STARTUP_TIMEOUT_S = 120.0
PREFECT = str(Path(sys.executable).parent / "prefect")
FOLPIPE = str(Path(sys.executable).parent / "folpipe")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process_group(process: subprocess.Popen[bytes], *, grace_s: float = 10.0) -> None:
    """SIGTERM the process group of ``process``, then SIGKILL it if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace_s)


@dataclass
class PrefectServer:
    """A running server: its API URL, home, an env for subprocesses, and spawned processes."""

    url: str
    home: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)
    database_url: str = ""
    startup_s: float = 0.0  # from spawn until /api/health answered (includes migrations)

    def run(
        self,
        args: Sequence[str],
        *,
        cwd: Path | None = None,
        timeout: float = 180.0,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command to completion against this server (never raises on exit status)."""
        return subprocess.run(
            list(args),
            cwd=cwd,
            env={**self.env, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
        )

    def spawn(
        self, args: Sequence[str], *, log: Path, cwd: Path | None = None
    ) -> subprocess.Popen[bytes]:
        """Start a long-running process (worker, serve) in its own process group."""
        handle = log.open("ab")
        process = subprocess.Popen(
            list(args), cwd=cwd, env=self.env, stdout=handle, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        handle.close()
        self.children.append(process)
        return process

    def stop(self) -> None:
        """Stop every spawned process, then the server; idempotent."""
        for child in reversed(self.children):
            stop_process_group(child)
        stop_process_group(self.process, grace_s=20.0)


def _server_env(home: Path, database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_PROFILES_PATH"):
        env.pop(key, None)
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_API_DATABASE_CONNECTION_URL=database_url,
        PREFECT_LOGGING_LEVEL="INFO",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
        **FAST_LOOPS,
    )
    return env


FAST_LOOPS = {
    # the server's loops, from Prefect's 5 s (scheduler: 60 s) to what a test waits for:
    # proactive automations (a deadline passed), new deployments' scheduled runs, paused
    # runs past their timeout, events readable through the API
    "PREFECT_SERVER_EVENTS_PROACTIVE_GRANULARITY": "PT1S",
    "PREFECT_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS": "1",
    "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
    "PREFECT_SERVER_SERVICES_PAUSE_EXPIRATIONS_LOOP_SECONDS": "1",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "0.5",
    # the processes started against it: `serve` polls for its runs every second (10 s)
    "PREFECT_RUNNER_POLL_FREQUENCY": "1",
}
"""Prefect settings of the test servers and the processes started against them: shorter
polling loops, so a test waits for what it tests and not for a loop's next turn."""


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``/api/health`` until it answers; fail with the server log if it never does."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prefect server exited early:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(
        f"prefect server not healthy after {STARTUP_TIMEOUT_S}s:\n{log.read_text()[-3000:]}"
    )


def migrate_sqlite(target: Path) -> Path:
    """A new SQLite database at ``target``, migrated by ``prefect server database upgrade``
    (what a server's first start does, without starting one): for a home whose test is not
    about a first start. Copy it; do not point a server at it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="folpipe-migrate-home-"))
    env = _server_env(home, f"sqlite+aiosqlite:///{target}")
    try:
        done = subprocess.run(
            [PREFECT, "server", "database", "upgrade", "-y"], env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=STARTUP_TIMEOUT_S,
            check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0 or not target.is_file():
        raise RuntimeError(f"prefect server database upgrade failed:\n{done.stdout[-3000:]}")
    return target


def start_server(
    database_url: str | None = None, *, sqlite_from: Path | None = None
) -> PrefectServer:
    """Start ``prefect server start`` and wait until it is healthy.

    ``database_url`` is Prefect's SQLAlchemy URL (``postgresql+asyncpg://…``); by default a
    SQLite file in the server's temporary PREFECT_HOME: new (the server migrates it on
    start), or a copy of ``sqlite_from`` (a database migrated already, :func:`migrate_sqlite`).
    """
    home = Path(tempfile.mkdtemp(prefix="folpipe-server-home-"))
    if sqlite_from is not None and database_url is None:
        shutil.copyfile(sqlite_from, home / "prefect.db")
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    database_url = database_url or f"sqlite+aiosqlite:///{home / 'prefect.db'}"
    env = _server_env(home, database_url)
    log = home / "server.log"
    began = time.monotonic()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    server = PrefectServer(url, home, {**env, "PREFECT_API_URL": url}, process)
    server.database_url = database_url
    atexit.register(server.stop)
    try:
        wait_healthy(url, process, log)
    except BaseException:
        server.stop()
        raise
    server.startup_s = time.monotonic() - began
    return server
