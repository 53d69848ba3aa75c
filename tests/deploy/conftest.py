"""Fixtures of the deployment tests: one real Prefect server per session and database.

* ``prefect_server``: ``prefect server start`` in a temporary PREFECT_HOME (the session's
  ``worker_server``, shared with the Prefect harness; on PostgreSQL where one can be started).
* ``postgres``: the session's throwaway PostgreSQL cluster (see ``postgres.py``); skips loudly
  without one.
* ``prefect_pg_server``: ``prefect server start`` backed by that PostgreSQL (the session's
  server, which is on it).

Each is started at most once per session, on first use, and stopped with all its workers.
"""

from __future__ import annotations

from typing import Any

import pytest

from .postgres import SKIP_REASONS, Postgres, skip_loudly
from .server import PrefectServer


@pytest.fixture(scope="session")
def prefect_server(worker_server: PrefectServer) -> PrefectServer:
    """A ``prefect server start`` process (temp home); stopped with all its workers. The
    session's one server (``worker_server``, tests/conftest.py), which the Prefect harness of
    in-process runs uses too."""
    return worker_server


@pytest.fixture(scope="session")
def postgres(session_postgres: Postgres | str, request: pytest.FixtureRequest) -> Postgres:
    """The session's PostgreSQL cluster in a temp dir on 127.0.0.1; ``.url`` is Prefect's
    SQLAlchemy URL."""
    if isinstance(session_postgres, str):
        skip_loudly(session_postgres, request.config)
    return session_postgres


@pytest.fixture(scope="session")
def prefect_pg_server(postgres: Postgres, worker_server: PrefectServer) -> PrefectServer:
    """A ``prefect server start`` process whose database is the session's PostgreSQL: the
    session's server (on PostgreSQL whenever there is one)."""
    assert worker_server.database_url == postgres.url, worker_server.database_url
    return worker_server


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Repeat why the PostgreSQL tests were skipped, at the very end of the output."""
    if SKIP_REASONS:
        terminalreporter.section("PostgreSQL tests SKIPPED", sep="!", yellow=True, bold=True)
        for reason in dict.fromkeys(SKIP_REASONS):
            terminalreporter.write_line(f"WARNING: {reason}", yellow=True, bold=True)
