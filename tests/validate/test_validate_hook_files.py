"""The validator reports broken hook files before anything runs."""

from __future__ import annotations

from pathlib import Path

from prefect_folpipe import validate_workflow


def test_hook_mistakes_are_reported_with_relative_files(tmp_path: Path) -> None:
    (tmp_path / "instructions.md").write_text("Do it.\n")
    task = tmp_path / "subtasks" / "10_child"
    (task / "hooks").mkdir(parents=True)
    (task / "instructions.md").write_text("Child.\n")
    (task / "hooks" / "pre_run.py").write_text("def run(ctx, task:\n")
    (task / "hooks" / "post_rnu.py").write_text("x = 1\n")

    found = {(d.code, d.file, d.task) for d in validate_workflow(tmp_path)}

    assert ("FP225", "subtasks/10_child/hooks/pre_run.py", "child") in found
    assert ("FP227", "subtasks/10_child/hooks/post_rnu.py", "child") in found
