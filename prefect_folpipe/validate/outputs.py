"""Output names: a task named like a declared output key (docs/format.md, "Outputs")."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ._common import at


def check_output_names(result: LoadResult) -> Iterator[Diagnostic]:
    """FP158 (warning): the name of a task that runs an agent equals an output key some task
    declares.

    With declared outputs, the declared top-level key wins: the copy of the task's outputs
    under its name is not written. Without, the task's answer text lands under its name, where
    another task's declared value also lands.
    """
    owners: dict[str, list[str]] = {}
    for task in result.all_tasks():
        for key in task.config.output_keys:
            owners.setdefault(key, []).append(task.path or task.name)
    for task in result.all_tasks():
        declared_by = owners.get(task.name)
        if not declared_by or not task.runs_agent:
            continue  # a task without an agent pass writes nothing under its name
        own = task.name in task.config.output_keys
        where = "its own output" if own else f"an output of {', '.join(map(repr, declared_by))}"
        if task.config.output is None:
            message = (
                f"task {task.name!r} declares no output, so its answer text is stored under "
                f"its name, which is also {where}"
            )
        else:
            message = (
                f"task name {task.name!r} is also {where}: context.{task.name} holds that "
                "declared value, and the task's outputs are not copied under its name"
            )
        yield at(
            result,
            task,
            "FP158",
            message,
            _output_loc(task.config.output, task.name) if own else ("name",),
            "rename the task (`name:`) or the output key, so that each context key has one meaning",
            Severity.WARNING,
        )


def _output_loc(output: object, key: str) -> tuple[str | int, ...]:
    """Where ``key`` sits in a declared ``output`` (a list item or a mapping key)."""
    if isinstance(output, list):
        return ("output", output.index(key))
    return ("output", key)
