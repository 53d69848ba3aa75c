"""Issue 11 point 14: the sandbox cannot be widened during a run.

Grants are computed once, when the task starts: a directory symlink a shell tool creates
grants nothing; a hard link under ``input/`` to an outside file is refused; a parent task
does not read its children's ``.env``; a task folder symlinked from outside the workflow is a
warning (its code would run unnoticed otherwise).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import write_workflow

from prefect_folpipe.authoring._context import ToolContext
from prefect_folpipe.authoring._grants import resolve_path
from prefect_folpipe.errors import SandboxViolation
from prefect_folpipe.providers import ToolCall
from prefect_folpipe.tools.toolbox import Toolbox
from prefect_folpipe.validate import load_workflow, validate_workflow

TOOLS = """## make_link
> type: shell

Make a link.

```bash
ln -s / rootlink && echo linked
```

## read_file
> type: python

Read a file.

```python
def read_file(ctx: ToolContext, path: str) -> str:
    return ctx.resolve_path(path).read_text()
```
"""


async def test_a_symlink_made_during_the_run_grants_nothing(tmp_path: Path) -> None:
    root = write_workflow(tmp_path / "wf", {"instructions.md": "x", "tools.md": TOOLS})
    workflow = load_workflow(root)
    toolbox = Toolbox(workflow.root, workflow, {})
    try:
        made = await toolbox.call(ToolCall("1", "make_link", {}))
        assert not made.is_error, made.content
        assert (root / "rootlink").is_symlink()
        read = await toolbox.call(ToolCall("2", "read_file", {"path": "rootlink/etc/hostname"}))
        assert read.is_error
        assert "FP201" in read.content
    finally:
        await toolbox.aclose()


def test_grants_are_those_of_the_start(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "input").mkdir(parents=True)
    ctx = ToolContext(task_dir=task)
    (task / "rootlink").symlink_to("/")
    with pytest.raises(SandboxViolation):
        ctx.resolve_path("rootlink/etc/hostname")


def test_a_hard_link_under_input_is_refused(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "input").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    os.link(outside, task / "input" / "copy.txt")
    with pytest.raises(SandboxViolation, match="hard link"):
        resolve_path(task, "input/copy.txt")
    (task / "input" / "own.txt").write_text("mine")
    assert resolve_path(task, "input/own.txt").read_text() == "mine"


def test_a_parent_reads_what_its_children_may_read_and_no_more(tmp_path: Path) -> None:
    task = tmp_path / "task"
    child = task / "subtasks" / "child"
    (child / "output").mkdir(parents=True)
    (child / "output" / "report.md").write_text("done")
    (child / ".env").write_text("TOKEN=secret")
    (child / "task.yaml").write_text("name: child")
    (child / "subtasks" / "grand" / "input").mkdir(parents=True)
    (child / "subtasks" / "grand" / ".env").write_text("TOKEN=deeper")
    assert resolve_path(task, "subtasks/child/output/report.md").read_text() == "done"
    assert resolve_path(task, "subtasks/child/subtasks/grand/input").is_dir()
    for path in (
        "subtasks/child/.env",
        "subtasks/child/task.yaml",
        "subtasks/child/subtasks/grand/.env",
    ):
        with pytest.raises(SandboxViolation):
            resolve_path(task, path)


def test_a_task_folder_linked_from_outside_the_workflow_warns(tmp_path: Path) -> None:
    elsewhere = write_workflow(tmp_path / "elsewhere", {"instructions.md": "x"})
    root = write_workflow(tmp_path / "wf", {"subtasks/local/instructions.md": "x"})
    (root / "subtasks" / "borrowed").symlink_to(elsewhere, target_is_directory=True)
    found = [d for d in validate_workflow(root) if d.code == "FP109"]
    assert len(found) == 1
    assert found[0].severity.value == "warning"
    assert "borrowed" in (found[0].file or "")
