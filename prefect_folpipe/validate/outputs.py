"""Output names: a task named like a declared output key (ARCHITECTURE §4)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ._common import at


def check_output_names(result: LoadResult) -> Iterator[Diagnostic]:
    """FP158 (warning): a task's name equals an output key some task declares.

    The declared top-level key wins: the copy of the task's outputs under its name is not
    written, so ``context.<name>`` holds the declared value, not the task's outputs.
    """
    owners: dict[str, list[str]] = {}
    for task in result.all_tasks():
        for key in task.config.output_keys:
            owners.setdefault(key, []).append(task.path or task.name)
    for task in result.all_tasks():
        declared_by = owners.get(task.name)
        if not declared_by:
            continue
        own = task.name in task.config.output_keys
        where = "its own output" if own else f"an output of {', '.join(map(repr, declared_by))}"
        yield at(
            result,
            task,
            "FP158",
            f"task name {task.name!r} is also {where}: context.{task.name} holds that declared "
            "value, and the task's outputs are not copied under its name",
            _output_loc(task.config.output, task.name) if own else ("name",),
            "read the declared keys at the top level, or rename the task (`name:`) to keep the "
            "copy under its name",
            Severity.WARNING,
        )


def _output_loc(output: object, key: str) -> tuple[str | int, ...]:
    """Where ``key`` sits in a declared ``output`` (a list item or a mapping key)."""
    if isinstance(output, list):
        return ("output", output.index(key))
    return ("output", key)
