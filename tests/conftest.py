"""Shared test setup: isolated Prefect home, no telemetry, one Prefect server per session
(per pytest-xdist worker).

Tests never reach the network. Prefect-bound tests use the ``prefect_harness`` fixture (the
session's server as the API of this process); subprocess tests get ``cli_env``, which points
them at that same server so no test process starts a server of its own. The deployment tests'
``prefect_server`` (tests/deploy/conftest.py) is that same server too: ``worker_server``, one
``prefect server start`` with every service (scheduler, pause expirations), started on first
use. Tests that share it keep apart by name: each deployment test file has work pools and
deployments of its own, and tests read runs back by flow run id.
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
from tiers import (  # noqa: F401  (the suite's tiers and file order: hooks, see tiers.py)
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_xdist_make_scheduler,
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
def worker_server() -> Iterator[Any]:
    """The session's one ``prefect server start`` (SQLite in a temporary home, every service
    on): a ``deploy.server.PrefectServer``, stopped with everything it spawned at the end."""
    from deploy.server import start_server

    server = start_server()
    try:
        yield server
    finally:
        server.stop()


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
            _drain_prefect_workers()
            os.environ.pop("PREFECT_API_URL", None)


def _drain_prefect_workers() -> None:
    """Send the logs and events Prefect still holds while the server is up: otherwise its log
    worker keeps retrying a stopped server, and the process hangs at exit for a minute."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=30)
    EventsWorker.drain_all(timeout=30)


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
