"""`skip_if` and `until` compile with the safe evaluator (FP130 unparsable, FP131 unsafe)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import Diagnostic
from ..expressions import ExpressionError, compile_condition
from ..loader import LoadResult
from ..workflow.tree import Task
from ._common import at


def check_conditions(result: LoadResult) -> Iterator[Diagnostic]:
    """Every `conditions.skip_if` and `subtasks.until` must compile."""
    for task in result.all_tasks():
        if task.config.conditions.skip_if is not None:
            problem = _problem(
                result, task, task.config.conditions.skip_if, ("conditions", "skip_if")
            )
            if problem:
                yield problem
        if task.config.subtasks is not None and task.config.subtasks.until is not None:
            problem = _problem(result, task, task.config.subtasks.until, ("subtasks", "until"))
            if problem:
                yield problem


def _problem(result: LoadResult, task: Task, expr: Any, loc: tuple[str, ...]) -> Diagnostic | None:
    try:
        compile_condition(expr)
    except ExpressionError as exc:
        return at(result, task, exc.code, f"{'.'.join(loc)}: {exc}", loc, exc.hint)
    return None
