"""Helpers shared by the rules."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ..loader._yaml import Loc
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


def families(result: LoadResult) -> Iterator[Task]:
    """Every task that has children (enabled or disabled)."""
    return (task for task in result.all_tasks() if siblings(task))
