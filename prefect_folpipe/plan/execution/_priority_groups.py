"""``priority_groups``: children grouped by priority, lowest first; a group runs at once."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...workflow.tree import Task
from .._nodes import Edge, NodePlan
from ._kind import ExecutionType, Shape

if TYPE_CHECKING:
    from .._plan import Plan


class PriorityGroups(ExecutionType):
    name = "priority_groups"

    def shape(self, task: Task) -> Shape:
        waves = priority_waves(task.children)
        return Shape(waves=tuple(tuple(child.path for child in wave) for wave in waves))

    def edges(self, task: Task) -> Iterator[Edge]:
        for before, after in itertools.pairwise(priority_waves(task.children)):
            yield from (Edge(a.path, b.path, "group") for a in before for b in after)

    def child_prefix(self, plan: Plan, parent: NodePlan, child: NodePlan, index: int) -> str:
        return f"[group {plan.task(child.path).priority}] "


def priority_waves(children: tuple[Task, ...] | list[Task]) -> list[list[Task]]:
    """Children grouped by priority, lowest first (sibling order within a group)."""
    ordered = sorted(children, key=lambda child: child.priority)
    groups = itertools.groupby(ordered, key=lambda child: child.priority)
    return [list(members) for _, members in groups]
