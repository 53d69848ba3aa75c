"""Fixtures of the deployment tests: one real Prefect server per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import PrefectServer, start_server


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[PrefectServer]:
    """A ``prefect server start`` process (SQLite, temp home); stopped with all its workers."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
