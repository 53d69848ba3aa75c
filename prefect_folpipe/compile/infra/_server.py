"""The Prefect API of a run: a running server, or a temporary one started here, and settled.

Without ``PREFECT_API_URL`` Prefect starts a temporary local server the first time a client is
made (``SubprocessASGIServer``, one per process), waiting ``PREFECT_SERVER_EPHEMERAL_STARTUP_
TIMEOUT_SECONDS`` (20) for it. A fresh ``PREFECT_HOME`` first migrates its database, which takes
30-45 s on a 2-core machine, so the first run failed with a raw traceback. :func:`ensure_api`
starts that same server first (``get_client()`` then reuses it) with a generous timeout when the
user set none, says so in one line, watches the server process (a server that dies fails at
once, not at the timeout) and turns a failure into ``InfrastructureError`` FP523.

At process exit the temporary server is stopped (an ``atexit`` hook of Prefect's). Task runs
reach the server as events recorded asynchronously by its task-run recorder, so a server
stopped right after a run lost the last states and printed "Error flushing events"
tracebacks. :data:`SETTLE` remembers the final state of every task run of the runs against a
temporary server; at exit, before the server stops, it drains Prefect's event and log
workers and waits (bounded) until the server has recorded those states.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..._process.wording import plural
from ...errors import InfrastructureError
from ..report import WRITER
from ._console import quiet_drains

LOG = logging.getLogger("prefect_folpipe.compile")

STARTING_LINE = (
    "starting a local Prefect server (first start prepares its database; "
    "set PREFECT_API_URL to use a running server)"
)
START_HINT = (
    "set PREFECT_API_URL to use a running server (`prefect server start`), or raise "
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
)
FIRST_START_TIMEOUT_S = 180
"""Start-up budget when the user set none: a first start migrates a new database (30-45 s
on a busy 2-core machine; Prefect's default is 20 s). A server that dies fails at once."""
SETTLE_TIMEOUT_S = 20.0
"""How long process exit waits for the temporary server to record the runs' task runs."""
STALL_S = 5.0
"""... and how long without any of them being recorded (a state the server sees otherwise)."""
RESTART_CODE = 3
"""Exit code of a temporary server whose port was taken (Prefect retries on another port) or
whose start-up failed (e.g. its database cannot be opened): uvicorn says 3 for both."""
MAX_RESTARTS = 3
"""A server failing this often is not meeting taken ports: its start-up fails."""
ANALYTICS_ENV = "PREFECT_SERVER_ANALYTICS_ENABLED"


def uses_temporary_server() -> bool:
    """True when no API is configured and Prefect would start a temporary server."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return not settings.api.url and bool(settings.server.ephemeral.enabled)


def startup_timeout() -> int:
    """The user's start-up timeout (env, profile or settings context), else a generous one."""
    from prefect.settings import get_current_settings

    ephemeral = get_current_settings().server.ephemeral
    if "startup_timeout_seconds" in ephemeral.model_fields_set:
        return int(ephemeral.startup_timeout_seconds)
    return FIRST_START_TIMEOUT_S


def ensure_api(announce: Callable[[str], None] | None = None) -> None:
    """Start the temporary server now if this run needs one (no-op with an API configured or
    a temporary server already running); ``announce`` gets the one line saying so (default:
    stderr). Raises ``InfrastructureError`` FP523 when it does not start."""
    if not uses_temporary_server():
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if server.running:
        return
    (announce or _to_stderr)(STARTING_LINE)
    timeout = startup_timeout()
    began = time.monotonic()
    with _quiet_prefect_start_line(), _server_defaults():
        error = _start_watched(server, timeout)
    if error is not None:
        raise InfrastructureError(
            f"Prefect's temporary local server did not start: {error}",
            code="FP523",
            hint=START_HINT,
        )
    LOG.debug("temporary Prefect server ready in %.1fs", time.monotonic() - began)


SERVER_DEFAULTS = {
    "analytics_enabled": (ANALYTICS_ENV, "false"),
    "logging_level": ("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL"),
}
"""The temporary server's settings folpipe chooses unless the user did (by setting name)."""


@contextlib.contextmanager
def _server_defaults() -> Iterator[None]:
    """Start the temporary server without its telemetry and logging only what is critical,
    unless the user chose otherwise.

    Its telemetry service wrote the server's SQLite database while a first start migrated it
    and printed ``database is locked`` tracebacks into the user's terminal; a server folpipe
    starts for one run sends no analytics. Stopped while it still records a big run's task
    runs (after the run waited for it as long as it does: the run warns how many it did not
    record), it printed "Error flushing" tracebacks of its own. What it fails to do reaches
    the run through the API, which reports it. The server process copies the environment as
    it starts, so the variables are set only around the start."""
    from prefect.settings import get_current_settings

    chosen = get_current_settings().server.model_fields_set
    added = []
    for field, (env, value) in SERVER_DEFAULTS.items():
        if field not in chosen and env not in os.environ:
            os.environ[env] = value
            added.append(env)
    try:
        yield
    finally:
        for env in added:
            os.environ.pop(env, None)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _start_watched(server: Any, timeout: int) -> str | None:
    """``server.start(timeout)`` in a thread, watching the process: ``None`` once it answers,
    else why not (it exited, or it did not answer in time)."""
    failures: list[BaseException] = []

    def start() -> None:
        try:
            server.start(timeout=timeout)
        except BaseException as exc:  # reported below, in the caller's thread
            failures.append(exc)

    thread = threading.Thread(target=start, name="folpipe-server-start", daemon=True)
    thread.start()
    restarted: set[int] = set()
    while thread.is_alive():
        thread.join(0.2)
        process = server.server_process
        code = process.poll() if process is not None else None
        if code == RESTART_CODE:  # port taken, or a start-up failure: uvicorn says 3 for both
            restarted.add(process.pid)
        if thread.is_alive() and (
            (code is not None and code != RESTART_CODE) or len(restarted) >= MAX_RESTARTS
        ):
            server.stop()  # ends the start loop; a later client gets a new server
            thread.join(5)
            return f"the server process exited with code {code} during start-up"
    if failures:
        text = str(failures[0]).split(" stdout:")[0].strip()
        if "Timed out" in text:
            return f"it did not answer within {timeout} s"
        return text or type(failures[0]).__name__
    return None


@contextlib.contextmanager
def _quiet_prefect_start_line() -> Iterator[None]:
    """Prefect's own two-line "Starting temporary server" notice: the folpipe line replaces it."""

    def drop(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Starting temporary server")

    logger = logging.getLogger("prefect")
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


class RunSettler:
    """Final task-run states of runs against a temporary server, waited for at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expected: dict[str, tuple[str, str]] = {}
        self._armed = False

    def arm(self) -> bool:
        """Called as a run starts: remember its states when it uses a temporary server."""
        if not uses_temporary_server():
            return False
        with self._lock:
            if not self._armed:
                self._armed = True
                _at_thread_exit(self.settle)
        return True

    def expect(self, state: Any) -> None:
        """A task run's final state as the run saw it (ignored unless armed)."""
        task_run_id = getattr(getattr(state, "state_details", None), "task_run_id", None)
        if not self._armed or task_run_id is None or state.type is None:
            return
        with self._lock:
            self._expected[str(task_run_id)] = (state.type.value, state.name or "")

    def settle(self, timeout: float = SETTLE_TIMEOUT_S) -> bool:
        """Drain Prefect's event and log workers and wait until the temporary server recorded
        every expected state; True when it did within ``timeout``."""
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()
        if not server.running or server.server_process is None:
            return True
        deadline = time.monotonic() + timeout
        _drain_prefect_workers(timeout)
        WRITER.flush(max(0.0, deadline - time.monotonic()))
        with self._lock:
            expected = dict(self._expected)
        return _wait_recorded(server.api_url, expected, deadline)


def _drain_prefect_workers(timeout: float) -> None:
    """Send what Prefect's event and log workers still hold (they start again if needed)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    quiet_drains()  # here and when Prefect drains them once more as the process exits
    for worker in (EventsWorker, APILogWorker):
        try:
            worker.drain_all(timeout=timeout)
        except Exception as exc:  # never fail an exit
            LOG.debug("could not drain %s: %s", worker.__name__, exc)


def _wait_recorded(api_url: str, expected: dict[str, tuple[str, str]], deadline: float) -> bool:
    """Poll the server until each task run has the expected state (type and name)."""
    import httpx

    pending = dict(expected)
    progress = time.monotonic()
    with httpx.Client(base_url=api_url, timeout=5.0) as client:
        while pending:
            before = len(pending)
            for chunk in _chunks(list(pending), 200):
                try:
                    response = client.post(
                        "/task_runs/filter",
                        json={"task_runs": {"id": {"any_": chunk}}, "limit": len(chunk)},
                    )
                    response.raise_for_status()
                except httpx.HTTPError as exc:
                    LOG.debug("could not read task runs back: %s", exc)
                    return False
                for run in response.json():
                    state = run.get("state") or {}
                    if (state.get("type"), state.get("name")) == pending.get(run["id"]):
                        pending.pop(run["id"])
            now = time.monotonic()
            if len(pending) < before:
                progress = now
            if not pending or now >= deadline or now - progress > STALL_S:
                break
            time.sleep(0.2)
    if pending:
        LOG.warning(
            "the local Prefect server did not record %s", plural(len(pending), "task run state")
        )
    return not pending


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _at_thread_exit(callback: Callable[[], Any]) -> None:
    """Run ``callback`` at interpreter exit before ``atexit`` (where Prefect stops the
    temporary server): the hook Prefect's own workers use."""
    register = getattr(threading, "_register_atexit", None)
    with contextlib.suppress(RuntimeError):  # already shutting down
        if register is not None:
            register(callback)
            return
        import atexit

        atexit.register(callback)


SETTLE = RunSettler()
