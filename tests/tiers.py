"""The suite's two tiers, and the order its files are handed to pytest-xdist's workers.

* **Fast tier**, ``-m "not slow"``: no real server. A test is ``slow`` when it needs one (a
  fixture of ``SLOW_FIXTURES`` at any depth, or a marker of ``SERVER_MARKERS``) or is marked
  ``slow`` itself (a test of a few seconds: subprocesses, property runs, an MCP server).
* **Full suite**: everything. With ``--dist loadfile`` the heaviest files go first, so that no
  worker starts a long deployment test while the other has nothing left to do. A file's
  weight is its measured time (``file_times.json``: seconds per file from a full
  run's junit XML, files of a second or more); a file not in it is weighed by its tests.

``tests/conftest.py`` imports the hooks below.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

SLOW_FIXTURES = frozenset(
    {"prefect_harness", "cli_env", "prefect_server", "prefect_pg_server", "postgres", "seed_sdist"}
    | {"folpipe_offline", "worker_server", "session_postgres", "prefect_sqlite_server"}
    | {"migrated_sqlite"}
)
"""Fixtures that start a real Prefect server (or a database, or fetch a package), or run the
``folpipe`` CLI in a process of its own."""
SERVER_MARKERS = frozenset({"prefect", "server", "postgres", "live"})
MEASURED: dict[str, float] = json.loads(
    (Path(__file__).parent / "file_times.json").read_text(encoding="utf-8")
)
"""Seconds per test file, measured (a refresh: sum the junit XML's test times by file)."""


def _weight(item: pytest.Item) -> float:
    """A rough cost in seconds: a deployment test is minutes, a Prefect run seconds."""
    if item.get_closest_marker("server") or item.get_closest_marker("postgres"):
        return 60.0
    return 3.0 if item.get_closest_marker("slow") else 0.1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tier, then order the files heaviest first (stable within a file)."""
    for item in items:
        needs = SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if needs or any(item.get_closest_marker(name) for name in SERVER_MARKERS):
            item.add_marker(pytest.mark.slow)
    weights: dict[str, float] = defaultdict(float)
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        path = _file(item)
        weights[path] += _weight(item) if path not in MEASURED else 0.0
        if path not in first:
            weights[path] += MEASURED.get(path, 0.0)
        first.setdefault(path, index)
    items.sort(key=lambda item: (-weights[_file(item)], first[_file(item)]))


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist hands out files in the order above (not by their number of tests)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
