"""Helpers shared by the rules."""

from __future__ import annotations

from ..errors import Diagnostic, Severity
from ..loader import LoadResult, Loc
from ..workflow.tree import Task


def at(
    result: LoadResult,
    task: Task,
    code: str,
    message: str,
    loc: Loc = (),
    hint: str | None = None,
    severity: Severity = Severity.ERROR,
) -> Diagnostic:
    """A diagnostic located at ``loc`` in the task's task.yaml / SKILL.md."""
    source = result.source(task)
    return Diagnostic(code, message, source.file, source.line(loc), task.path, hint, severity)


def siblings(task: Task) -> tuple[Task, ...]:
    """A task's children, enabled and disabled."""
    return (*task.children, *task.disabled_children)
