"""A ``folpipe validate`` answered from the parse cache says exactly what one that read every
file says: every workflow folder of this repository and folpipe 0.1.8's own examples, with the
cache off, then filled, then read by a "new process" (issue 15: the parse cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.loader.tools import parsecache
from prefect_folpipe.validate import check
from tests.builders import forget_parses

from .conftest import SEED_EXAMPLES

REPO = Path(__file__).resolve().parents[2]
FOLDERS = sorted(
    folder
    for parent in ("examples", "tests/fixtures/workflows", "tests/fixtures/agent",
                   "tests/fixtures/deploy", "tests/fixtures/tools", "tests/fixtures/cli")
    for folder in (REPO / parent).iterdir()
    if folder.is_dir()
)  # fmt: skip


def _reading(root: Path) -> dict[str, Any]:
    """Everything a static load reports: diagnostics, and every task's tools."""
    loaded, diagnostics = check(root, import_tools=False)
    tools = {
        task.path: [(tool, tool.parameters) for tool in task.tools] for task in loaded.all_tasks()
    }
    shared = list(loaded.workflow.shared_tools) if loaded.workflow else []
    found = sorted((str(d), str(d.severity)) for d in diagnostics)
    return {"diagnostics": found, "tools": tools, "shared": shared}


def _three_readings(root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    readings = []
    for setting in ("off", str(cache), str(cache)):  # uncached, filling, read back
        monkeypatch.setenv(parsecache.ENV, setting)
        forget_parses()
        readings.append(_reading(root))
    forget_parses()
    return readings


def test_the_repository_has_workflow_folders_with_tools() -> None:
    assert len(FOLDERS) >= 15
    assert sum(1 for folder in FOLDERS for _ in folder.rglob("tools.md")) >= 10


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_a_cached_reading_of_every_repository_folder_is_the_same(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    off, filling, cached = _three_readings(folder, tmp_path / "cache", monkeypatch)
    assert off == filling == cached


def test_a_cached_reading_of_folpipe_0_1_8s_examples_is_the_same(
    seed_examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = 0
    for name in SEED_EXAMPLES:
        off, filling, cached = _three_readings(
            seed_examples / name, tmp_path / "cache", monkeypatch
        )
        assert off == filling == cached, name
        declared += sum(map(len, off["tools"].values())) + len(off["shared"])
    assert declared  # the examples' tools.md files were read, not only their task.yaml
