"""Loop settings: bounded loops, loop-only options outside loops."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ._common import at

LOOP_ONLY = ("max_iterations", "iteration_timeout", "on_max_iterations")


def check_loops(result: LoadResult) -> Iterator[Diagnostic]:
    """FP150 loop without max_iterations; FP151 until without loop; FP152 loop-only options
    outside a loop (warning); FP153 on_max_iterations on a loop without `until`, where it has
    no effect (warning)."""
    for task in result.all_tasks():
        sub = task.config.subtasks
        if sub is None:
            continue
        if sub.execution_type == "loop":
            if sub.max_iterations is None:
                yield at(
                    result,
                    task,
                    "FP150",
                    "a loop needs `max_iterations`",
                    ("subtasks", "execution_type"),
                    "add e.g. `max_iterations: 5` under subtasks",
                )
            elif sub.until is None and "on_max_iterations" in sub.model_fields_set:
                yield at(
                    result,
                    task,
                    "FP153",
                    "on_max_iterations applies only to a loop with `until`: without one the "
                    "loop runs max_iterations times and completes",
                    ("subtasks", "on_max_iterations"),
                    "add `until:`, or remove on_max_iterations",
                    Severity.WARNING,
                )
            continue
        if sub.until is not None:
            yield at(
                result,
                task,
                "FP151",
                "`until` only applies to `execution_type: loop`",
                ("subtasks", "until"),
                "set `execution_type: loop`, or remove `until`",
            )
        for key in LOOP_ONLY:
            if key in sub.model_fields_set:
                yield at(
                    result,
                    task,
                    "FP152",
                    f"subtasks.{key} only applies to loops and is ignored",
                    ("subtasks", key),
                    "set `execution_type: loop`, or remove it",
                    Severity.WARNING,
                )
