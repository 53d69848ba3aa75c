"""Shared test setup: isolated Prefect home, no telemetry, one Prefect server per session
(per pytest-xdist worker).

Tests never reach the network. Prefect-bound tests use the ``prefect_harness`` fixture (the
session's server as the API of this process); subprocess tests get ``cli_env``, which points
them at that same server so no test process starts a server of its own. The deployment tests'
``prefect_server`` (tests/deploy/conftest.py) is that same server too: ``worker_server``, one
``prefect server start`` with every service (scheduler, pause expirations), started on first
use, on the session's throwaway PostgreSQL where one can be started (else on SQLite). Tests
that share it keep apart by name: each deployment test file has work pools and deployments of
its own, and tests read runs back by flow run id. ``prefect_sqlite_server`` is a ``prefect
server start`` on SQLite, Prefect's default database, for the tests that need one.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from drain import drain_prefect_workers
from tiers import (  # noqa: F401  (the suite's tiers and file order: hooks, see tiers.py)
    pytest_collection_modifyitems,
    pytest_configure,
)

# Python's default: modules compiled once are cached as bytecode and reused by every process
# the suite starts (a machine that sets PYTHONDONTWRITEBYTECODE=1 made each of them compile
# the package again). Tool code in workflow folders is imported without writing a cache; a
# helper module a test puts on PYTHONPATH gets one (tests/deploy/test_dask.py's copies of
# its fixture leave it out).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_HOME = Path(tempfile.mkdtemp(prefix="folpipe-test-home-"))
os.environ["PREFECT_HOME"] = str(_HOME)
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["FOLPIPE_PARSE_CACHE"] = str(_HOME / "parse-cache")  # on, as for users; not ~/.cache
os.environ["PREFECT_LOGGING_LEVEL"] = os.environ.get("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.pop("PREFECT_API_URL", None)
for _name in ("COLUMNS", "LINES"):  # pytest-xdist's workers set 80 x 24: same output as serial
    os.environ.pop(_name, None)
os.environ.pop("PREFECT_API_KEY", None)
for _name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "FOLPIPE_PROVIDER", "FOLPIPE_REPLIES"):
    os.environ.pop(_name, None)

FIXTURES = Path(__file__).parent / "fixtures"
REPO_ROOT = Path(__file__).parent.parent


@pytest.fixture(autouse=True)
def _signal_handlers_kept() -> Iterator[None]:
    """A test leaves SIGINT and SIGTERM as it found them (something in a long pytest-xdist
    worker left SIGINT changed, and a later test's subprocess inherited it)."""
    import signal

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        if handler is not None and signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)


@pytest.fixture(scope="session")
def session_postgres() -> Iterator[Any]:
    """The session's throwaway PostgreSQL cluster (``deploy.postgres.Postgres``), or why none
    could be started here (a ``str``); stopped and deleted at the end."""
    from contextlib import ExitStack

    from deploy.postgres import PostgresUnavailable, running_postgres

    with ExitStack() as stack:
        try:
            found: Any = stack.enter_context(running_postgres())
        except PostgresUnavailable as exc:
            found = str(exc)
        except Exception as exc:  # the harness falls back to SQLite; the PostgreSQL tests say why
            found = f"PostgreSQL did not start: {type(exc).__name__}: {exc}"
        yield found


@pytest.fixture(scope="session")
def worker_server(session_postgres: Any) -> Iterator[Any]:
    """The session's one ``prefect server start`` (every service on, a temporary home): a
    ``deploy.server.PrefectServer``, stopped with everything it spawned at the end.

    Its database is the session's PostgreSQL when there is one: on SQLite, a run started
    while the server still records the last one's task runs is often answered "database is
    locked" (HTTP 503), and Prefect's client waits 2 s before it tries again."""
    from deploy.server import start_server

    url = None if isinstance(session_postgres, str) else session_postgres.url
    server = start_server(database_url=url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Prefect SQLite database migrated already (``prefect server database upgrade``), for
    a home or server whose test is not about a first start (that start migrates a new
    database: seconds). Made once per test session, whichever pytest-xdist worker needs it
    first (the others wait for it); copy it, never open it."""
    import fcntl

    from deploy.server import migrate_sqlite

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the workers' basetemps sit side by side in one folder
    target = shared / "migrated-sqlite" / "prefect.db"
    target.parent.mkdir(exist_ok=True)
    with (shared / "migrated-sqlite.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (target.parent / "done").exists():
            migrate_sqlite(target)
            (target.parent / "done").touch()
    return target


@pytest.fixture(scope="module")
def prefect_sqlite_server(worker_server: Any, migrated_sqlite: Path) -> Iterator[Any]:
    """A ``prefect server start`` on SQLite, Prefect's default database: the session's server
    when it is on SQLite, else one of its own, on a copy of ``migrated_sqlite``, for the test
    module that asks for it (an idle server's service loops cost CPU the rest of the suite
    could use)."""
    from deploy.server import start_server

    if worker_server.database_url.startswith("sqlite"):
        yield worker_server
        return
    server = start_server(sqlite_from=migrated_sqlite)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def migrated_home(migrated_sqlite: Path) -> Callable[[Path], Path]:
    """``migrated_home(home)``: the folder ``home`` (a PREFECT_HOME) created, its database a
    copy of ``migrated_sqlite``; returns ``home``."""
    import shutil

    def make(home: Path) -> Path:
        home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated_sqlite, home / "prefect.db")
        return home

    return make


@pytest.fixture(scope="session")
def prefect_harness(worker_server: Any) -> Iterator[str]:
    """The session's Prefect server as this process's API (settings and environment), as
    Prefect's test harness sets it; yields its API URL."""
    from contextlib import ExitStack

    import prefect.context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url = worker_server.url
    with ExitStack() as stack:
        stack.enter_context(temporary_settings(updates={PREFECT_API_URL: url}))
        # also for code in a context copied before (what prefect_test_harness does too)
        stack.enter_context(
            prefect.context._temporary_global_settings_context(
                prefect.context.get_settings_context()
            )
        )
        os.environ["PREFECT_API_URL"] = url
        try:
            yield url
        finally:
            from prefect_folpipe.compile import flush_artifacts

            flush_artifacts(60)  # the server stops after the harness: write what is queued
            drain_prefect_workers()
            os.environ.pop("PREFECT_API_URL", None)


@pytest.fixture
def cli_env(prefect_harness: str) -> dict[str, str]:
    """Environment for a ``folpipe`` subprocess that talks to the session's Prefect server."""
    env = dict(os.environ)
    env["PREFECT_API_URL"] = prefect_harness
    return env


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def make_workflow(tmp_path: Path) -> Callable[..., Path]:
    """``make_workflow(files, name=None)``: a workflow folder from a dict (builders)."""
    from builders import write_workflow

    counter = iter(range(1000))

    def make(files: Mapping[str, Any], name: str | None = None) -> Path:
        return write_workflow(tmp_path / (name or f"wf{next(counter)}"), files)

    return make


@pytest.fixture
def run(prefect_harness: str) -> Callable[..., Any]:
    """``run(path, context=None, **options)`` -> RunResult (real Prefect, session harness)."""
    from prefect_folpipe.compile import run_workflow

    def go(path: Path, context: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        result = run_workflow(path, context, **kwargs)
        assert gc.get_freeze_count() == 0, "a run left objects out of garbage collection"
        return result

    return go
