"""Hooks: discovery of hooks/pre_run|post_run (.py or .sh) and running them."""

from __future__ import annotations

from pathlib import Path

from prefect_folpipe.tools.hooks import discover_hooks


def test_discover_hooks_py_and_sh(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre_run.py").write_text("def run(ctx, task):\n    pass\n")
    (hooks / "post_run.sh").write_text("echo done\n")
    (hooks / "notes.txt").write_text("not a hook")
    found = discover_hooks(tmp_path)
    assert found == {"pre_run": hooks / "pre_run.py", "post_run": hooks / "post_run.sh"}
    assert all(path.is_absolute() for path in found.values())


def test_python_hook_wins_over_shell(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre_run.sh").write_text("echo sh\n")
    (hooks / "pre_run.py").write_text("def run(ctx, task):\n    pass\n")
    assert discover_hooks(tmp_path) == {"pre_run": hooks / "pre_run.py"}


def test_no_hooks(tmp_path: Path) -> None:
    assert discover_hooks(tmp_path) == {}
