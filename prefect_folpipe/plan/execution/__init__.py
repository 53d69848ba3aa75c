"""Execution types of a branch, as a registry (Prefect-free).

One module per type gives everything about it: the shape of its plan node (waves, a DAG, loop
bounds) and its edges, how ``folpipe plan`` walks it, how ``graph`` / ``tree`` label it, and
how a run executes it through an ``Executor`` (the Prefect side supplies one), returning an
``Outcome``: status, the merged delta (children in sibling order) and the error that failed
the group. Task-level ``on_failure`` is applied by the executor before an outcome reaches
here; the types apply the group's ``on_error``. To add a type: a module with an
:class:`ExecutionType` subclass, one entry in ``REGISTERED`` below, and its name in the
format's vocabulary (``workflow.config.ExecutionType``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...workflow.tree import Task
from ._fanout import is_signal
from ._graph import Graph, dag_plan
from ._kind import ExecutionType, Shape, Waves, condition_text
from ._loop import Loop
from ._outcome import Executor, Outcome, Scope
from ._parallel import Parallel
from ._policy import ChildPolicy
from ._priority_groups import PriorityGroups, priority_waves
from ._sequential import Sequential

if TYPE_CHECKING:
    from .._plan import Plan

REGISTERED: tuple[ExecutionType, ...] = (
    Parallel(),
    Sequential(),
    Graph(),
    Loop(),
    PriorityGroups(),
)
TYPES: dict[str, ExecutionType] = {kind.name: kind for kind in REGISTERED}


def execution_type(name: str) -> ExecutionType:
    """The registered execution type called ``name``."""
    return TYPES[name]


async def run_group(
    plan: Plan, group: Task, context: dict[str, Any], ex: Executor, scope: Scope
) -> Outcome:
    """Run a branch's children as its plan node says."""
    node = plan.node(group.path)
    assert node.execution_type is not None
    return await execution_type(node.execution_type).run(plan, group, context, ex, scope)


__all__ = [
    "REGISTERED",
    "TYPES",
    "ChildPolicy",
    "ExecutionType",
    "Executor",
    "Outcome",
    "Scope",
    "Shape",
    "Waves",
    "condition_text",
    "dag_plan",
    "execution_type",
    "is_signal",
    "priority_waves",
    "run_group",
]
