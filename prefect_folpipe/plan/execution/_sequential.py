"""``sequential``: one child after another, in run order, each seeing what the earlier wrote."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...workflow.tree import Task
from .._nodes import Edge, NodePlan
from ._kind import ExecutionType, Shape, one_wave_each

if TYPE_CHECKING:
    from .._plan import Plan


class Sequential(ExecutionType):
    name = "sequential"
    concurrent = False

    def shape(self, task: Task) -> Shape:
        return Shape(waves=one_wave_each(task))

    def edges(self, task: Task) -> Iterator[Edge]:
        return order_edges(task)

    def child_prefix(self, plan: Plan, parent: NodePlan, child: NodePlan, index: int) -> str:
        return f"{index}. "


def order_edges(task: Task) -> Iterator[Edge]:
    """``a -> b`` for each pair of consecutive enabled children."""
    pairs = itertools.pairwise(task.children)
    return (Edge(a.path, b.path, "order") for a, b in pairs)
