"""Tasks that can do nothing, and switches that do nothing."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ._common import at


def check_empty_tasks(result: LoadResult) -> Iterator[Diagnostic]:
    """FP115: no instructions, no enabled subtasks and no hooks (warning: nothing runs).
    FP118: an empty instructions file. FP117: ``enabled: false`` on the root."""
    assert result.workflow is not None
    root = result.workflow.root
    if not root.config.enabled:
        yield at(
            result,
            root,
            "FP117",
            "`enabled: false` on the workflow root is ignored",
            ("enabled",),
            "disable subtasks instead, or don't run the workflow",
            Severity.WARNING,
        )
    for task in result.all_tasks():
        if task.instructions is not None and not task.instructions.strip():
            yield _empty_instructions(result, task)
        elif task.instructions is None and not task.children and not task.hooks:
            what = "no enabled subtasks" if task.disabled_children else "no subtasks"
            yield at(
                result,
                task,
                "FP115",
                f"task has no instructions, {what} and no hooks: it does nothing",
                (),
                "add an instructions.md, or subtasks/",
                Severity.WARNING,
            )


def _empty_instructions(result: LoadResult, task: object) -> Diagnostic:
    file = getattr(task, "instructions_file", None)
    rel = file.relative_to(result.root_dir).as_posix() if file is not None else None
    return Diagnostic(
        "FP118",
        "the instructions are empty",
        rel,
        1,
        getattr(task, "path", None),
        "write what the agent should do, or delete the file to make this a pure orchestrator",
        Severity.WARNING,
    )
