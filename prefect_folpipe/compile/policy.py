"""A child's own failure policy (Prefect-free): ``skip_if`` before it runs, ``on_failure`` after.

The group's ``on_error`` is applied afterwards by the strategies in ``compile.groups``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expressions import Condition, compile_condition
from ..workflow.approval import mentions
from ..workflow.context import ERRORS_KEY, answer_delta
from ..workflow.tree import Task
from .contextops import error_entry
from .groups import Outcome


class ChildPolicy:
    """Evaluates ``conditions.skip_if`` (each compiled once per run) and ``on_failure``."""

    def __init__(self) -> None:
        self._conditions: dict[str, Condition] = {}

    def should_skip(self, task: Task, context: Mapping[str, Any]) -> bool:
        expression = task.config.conditions.skip_if
        if expression is None:
            return False
        condition = self._conditions.get(task.path)
        if condition is None:
            condition = self._conditions[task.path] = compile_condition(expression)
        return bool(condition.evaluate(context))

    @staticmethod
    def skips_before_gate(task: Task) -> bool:
        """Whether ``skip_if`` is decided before the task's approval gate asks: always, unless
        the condition reads a key of the answer (then it is decided with the answer)."""
        approval, expression = task.config.approval, task.config.conditions.skip_if
        return approval is None or expression is None or not mentions(expression, approval.input)

    @staticmethod
    def on_failure(task: Task, result: Outcome, iteration: int | None) -> Outcome:
        """Task-level ``on_failure`` (skip | use_default) before the group's ``on_error``."""
        mode = task.config.on_failure
        if result.status != "failed" or mode == "fail":
            return result
        entry = error_entry(task, result.error or "failed", iteration)
        delta: dict[str, Any] = {}
        if mode == "use_default":
            delta = answer_delta(task, task.config.default_output or {})
        delta[ERRORS_KEY] = [entry]
        return Outcome("failed", delta, result.error, handle=result.handle, handled=True)
