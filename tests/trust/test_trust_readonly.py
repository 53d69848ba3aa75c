"""Issue 31 point 1: read-only commands never run the workflow's code.

A folder whose code writes a file when it is loaded: a tools.md python block (top level), a
``tools/*.py`` module (module level and a decorator argument), a ``module:`` provider found in
the folder (the current directory is on ``sys.path`` for ``python -m``) and a hook. ``validate``,
``tree``, ``graph``, ``plan``, ``status``, ``convert`` and ``schema`` write nothing; ``test``
and ``run`` of the same folder made invalid exit 2 before any of it runs; a valid folder's run
does import it (the reproducer is live).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from builders import write_workflow

from prefect_folpipe.validate import has_code_tools, load_workflow


def _files(marks: Path) -> dict[str, object]:
    def touch(name: str) -> str:
        return f"open({str(marks / name)!r}, 'w').write('ran')\n"

    return {
        "task.yaml": {"providers": {"default": "mine", "mine": {"module": "myprov", "model": "m"}}},
        "instructions.md": "Do it.",
        "tools.md": "## touch_md\n\nTouch.\n\n```python\n"
        + touch("md")
        + "\ndef touch_md(level: int = 1) -> str:\n    return 'x'\n```\n",
        "tools/touch.py": "from prefect_folpipe import tool\n"
        + touch("py")
        + "\n\n@tool(name='touch_py', retries=2)\n"
        + "def touch(query: str) -> str:\n    return query\n",
        "myprov.py": touch("prov")
        + "class Mine:\n    name = 'mine'\n\n    def __init__(self, **kw):\n        pass\n\n"
        "    async def complete(self, request):\n        raise RuntimeError('no')\n",
        "hooks/pre_run.py": touch("hook") + "def run(ctx, task):\n    pass\n",
        "tests.yaml": {"cases": [{"name": "one", "models": {"default": "ok"}}]},
    }


DECORATOR = (
    "from prefect_folpipe import tool\n\n\n"
    "@tool(name='touch_dec', description=str(open({!r}, 'w').write('ran')))\n"
    "def touch(query: str) -> str:\n    return query\n"
)
"""A decorator argument that runs code: only an import could read it, so the folder is
invalid (FP214) for the static reading a run now starts with."""


def _folder(tmp_path: Path, *, invalid: str = "") -> tuple[Path, Path]:
    marks = tmp_path / "marks"
    marks.mkdir()
    files = _files(marks)
    if invalid == "key":
        task = dict(files["task.yaml"])  # type: ignore[call-overload]
        files["task.yaml"] = {**task, "no_such_key": 1}
    elif invalid == "decorator":
        files["tools/dec.py"] = DECORATOR.format(str(marks / "decorator"))
    return write_workflow(tmp_path / "wf", files), marks


def _cli(env: Mapping[str, str], cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd,
        timeout=240,
    )


def _written(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "."),
        ("validate", ".", "--json"),
        ("tree", ".", "--json"),
        ("graph", "."),
        ("plan", ".", "--json"),
        ("plan", ".", "--provider", "scripted", "--json"),
        ("convert", "task-to-skill", "."),
        ("schema",),
    ],
)
def test_offline_read_only_commands_run_nothing(tmp_path: Path, args: tuple[str, ...]) -> None:
    root, marks = _folder(tmp_path)
    proc = _cli(os.environ, root, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _written(marks) == []


def test_status_runs_nothing(tmp_path: Path, cli_env: dict[str, str]) -> None:
    root, marks = _folder(tmp_path)
    proc = _cli(cli_env, root, "status", ".", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["runs"] == []
    assert _written(marks) == []


@pytest.mark.parametrize(
    ("command", "invalid", "named"),
    [
        ("test", "key", "no_such_key"),
        ("run", "key", "no_such_key"),
        ("test", "decorator", "tools/dec.py"),
        ("run", "decorator", "tools/dec.py"),
    ],
)
def test_invalid_folder_is_refused_before_its_code_runs(
    tmp_path: Path, command: str, invalid: str, named: str
) -> None:
    root, marks = _folder(tmp_path, invalid=invalid)
    proc = _cli(os.environ, root, command, ".", "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    assert document["error"]["type"] == "WorkflowValidationError"
    assert named in json.dumps(document)
    assert _written(marks) == []


def test_a_run_of_the_valid_folder_does_run_it(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The control: the same code runs where it should (tools at load, provider, hook)."""
    root, marks = _folder(tmp_path)
    proc = _cli(cli_env, root, "run", ".", "--json")
    assert proc.returncode != 2, proc.stdout + proc.stderr
    assert {"md", "py", "prov", "hook"} <= set(_written(marks))


def test_load_workflow_checks_statically_before_importing(tmp_path: Path) -> None:
    from prefect_folpipe.errors import WorkflowValidationError

    root, marks = _folder(tmp_path, invalid="key")
    with pytest.raises(WorkflowValidationError):
        load_workflow(root)
    assert _written(marks) == []
    (root / "task.yaml").write_text("providers: {default: scripted}\n")
    workflow = load_workflow(root)
    assert has_code_tools(workflow) and set(_written(marks)) == {"md", "py"}


def test_plan_and_run_key_python_tools_alike(tmp_path: Path) -> None:
    """``plan`` reads the tool code, the run imports it: the tasks' hashes (what checkpoints
    key on) are the same, even where the static reading cannot know a type (an Enum)."""
    module = (
        "from enum import Enum\n\nfrom prefect_folpipe import tool\n\n\n"
        "class Colour(Enum):\n    RED = 'red'\n\n\n"
        "@tool\ndef paint(colour: Colour) -> str:\n    return colour.value\n"
    )
    root = write_workflow(
        tmp_path / "wf",
        {"instructions.md": "x", "tools/paint.py": module, "subtasks/a/instructions.md": "y"},
    )
    imported, read = load_workflow(root), load_workflow(root, import_tools=False)
    assert imported.root.tools[0].parameters != read.root.tools[0].parameters
    pairs = [(imported.root, read.root), (imported.root.children[0], read.root.children[0])]
    for one, other in pairs:
        assert one.content_hash and one.content_hash == other.content_hash
