"""The suite's two tiers, and the order its files are handed to pytest-xdist's workers.

* **Fast tier**, ``-m "not slow"``: no real server. A test is ``slow`` when it needs one (a
  fixture of ``SLOW_FIXTURES`` at any depth, or a marker of ``SERVER_MARKERS``) or is marked
  ``slow`` itself (a test of a few seconds: subprocesses, property runs, an MCP server).
* **Full suite**: everything. With ``--dist loadfile`` the heaviest files go first, so that no
  worker starts a long deployment test while the other has nothing left to do; the files
  of ``SHARED_SCOPES`` run on one worker together (one PostgreSQL cluster per suite). A
  file's weight is its measured time (``file_times.json``: seconds per file from a full
  run's junit XML, files of a second or more); a file not in it is weighed by its tests.

``tests/conftest.py`` imports the hooks below.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

SLOW_FIXTURES = frozenset(
    {"prefect_harness", "cli_env", "prefect_server", "prefect_pg_server", "postgres", "seed_sdist"}
    | {"folpipe_offline", "worker_server"}
)
"""Fixtures that start a real Prefect server (or a database, or fetch a package), or run the
``folpipe`` CLI in a process of its own."""
SERVER_MARKERS = frozenset({"prefect", "server", "postgres", "live"})
SHARED_SCOPES = {
    "tests/deploy/test_postgres_server.py": "postgres",
    "tests/deploy/test_server_e2e.py": "postgres",
}
"""Files that share one pytest-xdist work unit (and so one worker's session fixtures)."""


MEASURED: dict[str, float] = json.loads(
    (Path(__file__).parent / "file_times.json").read_text(encoding="utf-8")
)
"""Seconds per test file, measured (a refresh: sum the junit XML's test times by file)."""


def _weight(item: pytest.Item) -> float:
    """A rough cost in seconds: a deployment test is minutes, a Prefect run seconds."""
    if item.get_closest_marker("server") or item.get_closest_marker("postgres"):
        return 60.0
    return 3.0 if item.get_closest_marker("slow") else 0.1


def scope_of(nodeid: str) -> str:
    """The work unit of a test: its file, or the shared scope its file belongs to."""
    path = nodeid.split("::", 1)[0]
    return SHARED_SCOPES.get(path, path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tier, then order the files heaviest first (stable within a file)."""
    for item in items:
        needs = SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if needs or any(item.get_closest_marker(name) for name in SERVER_MARKERS):
            item.add_marker(pytest.mark.slow)
    weights: dict[str, float] = defaultdict(float)
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        scope = scope_of(item.nodeid)
        path = item.nodeid.split("::", 1)[0]
        weights[scope] += _weight(item) if path not in MEASURED else 0.0
        if scope not in first:
            weights[scope] += sum(t for f, t in MEASURED.items() if scope_of(f) == scope)
        first.setdefault(scope, index)
    items.sort(key=lambda item: (-weights[scope_of(item.nodeid)], first[scope_of(item.nodeid)]))


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist hands out files in the order above (not by their number of tests)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the files of ``SHARED_SCOPES`` as one work unit."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedScopes(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return SharedScopes(config, log)
