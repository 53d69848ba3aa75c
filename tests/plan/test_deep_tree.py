"""A tree as deep as the file system allows (``subtasks/a`` nested until paths reach about
4,000 characters: some 360 levels) is previewed like any other: ``folpipe plan`` walked it
with three Python frames a level and ended in a ``RecursionError`` traceback."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefect_folpipe.cli import cli
from tests.builders import write_workflow


def _deepest(root: Path) -> int:
    folder, levels = root, 0
    while len(str(folder / "subtasks" / "a" / "instructions.md")) < 3900:
        folder = folder / "subtasks" / "a"
        folder.mkdir(parents=True)
        (folder / "instructions.md").write_text("Answer.")
        levels += 1
    return levels


@pytest.mark.slow
def test_plan_previews_a_tree_as_deep_as_paths_allow(tmp_path: Path) -> None:
    root = write_workflow(tmp_path / "wf", {"instructions.md": "Coordinate."})
    levels = _deepest(root)
    assert levels > 1000 // 3  # deeper than a walk of three frames a level could go
    limit = sys.getrecursionlimit()
    result = CliRunner().invoke(cli, ["plan", str(root), "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    steps = json.loads(result.output)["steps"]
    assert len({step["path"] for step in steps}) == levels + 1
    assert sys.getrecursionlimit() == limit  # raised for the walk only
    assert os.sep.join(["a"] * levels) == max((s["path"] for s in steps), key=len)
