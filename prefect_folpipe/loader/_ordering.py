"""The run order of a task's children: ``(priority, folder name)``, or ``subtasks.order``
(the listed children exactly, in that order; unlisted folders left out with FP114)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import Severity, suggest

if TYPE_CHECKING:
    from ._discover import RawTask

Report = Callable[..., None]
"""``FolderFiles.error(code, message, file, line, task, hint, severity)``."""


def order_children(parent: RawTask, found: list[RawTask], report: Report) -> list[RawTask]:
    """``found`` in run order: ``(priority, folder name)``, or exactly ``subtasks.order``."""
    found.sort(key=lambda c: (c.priority, c.folder.name))
    order = parent.config.subtasks.order if parent.config.subtasks else None
    if order is None:
        return found
    by_key: dict[str, RawTask] = {}
    for child in found:
        by_key.setdefault(child.folder.name, child)
        by_key.setdefault(child.name, child)
    chosen: list[RawTask] = []
    for index, entry in enumerate(order):
        _order_entry(parent, by_key, chosen, index, entry, report)
    for child in found:
        if not any(child is c for c in chosen):
            report(
                "FP114",
                f"subtask {child.name!r} is not listed in subtasks.order and is left out",
                parent.source.file,
                parent.source.line(("subtasks", "order")),
                parent.rel_dir,
                f"add {child.name!r} to subtasks.order, or remove the folder",
                Severity.WARNING,
            )
    return chosen


def _order_entry(
    parent: RawTask,
    by_key: dict[str, RawTask],
    chosen: list[RawTask],
    index: int,
    entry: str,
    report: Report,
) -> None:
    loc = ("subtasks", "order", index)
    child = by_key.get(entry)
    if child is None:
        close = suggest(entry, sorted(by_key))
        report(
            "FP111",
            f"subtasks.order names unknown subtask {entry!r}",
            parent.source.file,
            parent.source.line(loc),
            parent.rel_dir,
            f"did you mean {close!r}?"
            if close
            else f"subtasks are: {', '.join(sorted(by_key)) or 'none'}",
        )
    elif any(child is c for c in chosen):
        report(
            "FP112",
            f"subtasks.order lists {entry!r} twice",
            parent.source.file,
            parent.source.line(loc),
            parent.rel_dir,
            "list each subtask once",
        )
    else:
        chosen.append(child)
