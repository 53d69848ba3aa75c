"""A child's own failure policy (Prefect-free): ``skip_if`` before it runs, ``on_failure`` after.

The group's ``on_error`` is applied afterwards by the strategies in ``compile.groups``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from typing import Any

from ...expressions import Condition, compile_condition
from ...workflow.approval import mentions
from ...workflow.context import ERRORS_KEY, answer_delta
from ...workflow.tree import Task
from ..contextops import error_entry
from ..failures import TaskTimedOut
from ._evaluation import evaluate_condition
from ._outcome import Outcome


class ChildPolicy:
    """Evaluates ``conditions.skip_if`` (each compiled once per run) and ``on_failure``."""

    def __init__(self, declared_outputs: Collection[str] = ()) -> None:
        self._conditions: dict[str, Condition] = {}
        self.declared_outputs = declared_outputs

    async def should_skip(
        self, task: Task, context: Mapping[str, Any], timeout: float | None = None
    ) -> bool:
        """Whether ``skip_if`` holds, evaluated within the task's ``timeout`` (FP516)."""
        expression = task.config.conditions.skip_if
        if expression is None:
            return False
        condition = self._conditions.get(task.path)
        if condition is None:
            condition = self._conditions[task.path] = compile_condition(expression)
        try:
            async with asyncio.timeout(timeout):
                return await evaluate_condition(condition, context)
        except TimeoutError:
            raise TaskTimedOut(
                f"conditions.skip_if of task '{task.path}' did not finish within "
                f"settings.timeout={timeout}s"
            ) from None

    @staticmethod
    def skips_before_gate(task: Task) -> bool:
        """Whether ``skip_if`` is decided before the task's approval gate asks: always, unless
        the condition reads a key of the answer (then it is decided with the answer)."""
        approval, expression = task.config.approval, task.config.conditions.skip_if
        return approval is None or expression is None or not mentions(expression, approval.input)

    def on_failure(self, task: Task, result: Outcome, iteration: int | None) -> Outcome:
        """Task-level ``on_failure`` (skip | use_default) before the group's ``on_error``."""
        mode = task.config.on_failure
        if result.status != "failed" or mode == "fail":
            return result
        entry = error_entry(task, result.error or "failed", iteration)
        delta: dict[str, Any] = {}
        if mode == "use_default":
            default = task.config.default_output or {}
            delta = answer_delta(task, default, declared=self.declared_outputs)
        delta[ERRORS_KEY] = [*result.delta.get(ERRORS_KEY, []), entry]
        return Outcome("failed", delta, result.error, handle=result.handle, handled=True)
