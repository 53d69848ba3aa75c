"""Fixtures of the deployment tests: one real Prefect server per session and database.

* ``prefect_server``: ``prefect server start`` on SQLite in a temporary PREFECT_HOME (the
  session's ``worker_server``, shared with the Prefect harness).
* ``postgres``: a throwaway PostgreSQL cluster (see ``postgres.py``); skips loudly without one.
* ``prefect_pg_server``: ``prefect server start`` backed by that PostgreSQL.

Each is started at most once per session, on first use, and stopped with all its workers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from .postgres import SKIP_REASONS, Postgres, PostgresUnavailable, running_postgres, skip_loudly
from .server import PrefectServer, start_server


@pytest.fixture(scope="session")
def prefect_server(worker_server: PrefectServer) -> PrefectServer:
    """A ``prefect server start`` process (SQLite, temp home); stopped with all its workers.
    The session's one server (``worker_server``, tests/conftest.py), which the Prefect
    harness of in-process runs uses too."""
    return worker_server


@pytest.fixture(scope="session")
def postgres(request: pytest.FixtureRequest) -> Iterator[Postgres]:
    """A PostgreSQL cluster in a temp dir on 127.0.0.1; ``.url`` is Prefect's SQLAlchemy URL."""
    with contextlib.ExitStack() as stack:
        try:
            pg = stack.enter_context(running_postgres())
        except PostgresUnavailable as exc:
            skip_loudly(str(exc), request.config)
        yield pg


@pytest.fixture(scope="session")
def prefect_pg_server(postgres: Postgres) -> Iterator[PrefectServer]:
    """A ``prefect server start`` process whose database is the session's PostgreSQL."""
    server = start_server(database_url=postgres.url)
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Repeat why the PostgreSQL tests were skipped, at the very end of the output."""
    if SKIP_REASONS:
        terminalreporter.section("PostgreSQL tests SKIPPED", sep="!", yellow=True, bold=True)
        for reason in dict.fromkeys(SKIP_REASONS):
            terminalreporter.write_line(f"WARNING: {reason}", yellow=True, bold=True)
