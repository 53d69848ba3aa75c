"""Execution types of a branch (docs/format.md), Prefect-free.

Each strategy runs a branch's children as its ``Plan`` node says (waves, the DAG, the loop
bounds) through an ``Executor`` (the Prefect side supplies it) and returns an ``Outcome``:
status, the merged delta (children in sibling order) and the error that failed the group.
Task-level ``on_failure`` is applied by the executor before an outcome reaches here; the
strategies apply the group's ``on_error``: ``waves`` (parallel, sequential), ``graphs``
(``depends_on``), ``loops``; what they share is in ``outcome`` and ``fanout``.
"""

from __future__ import annotations

from typing import Any

from ..workflow.tree import Task
from .graphs import run_graph
from .loops import run_loop
from .outcome import Executor, Outcome, Scope
from .plan import Plan
from .waves import run_waves


async def run_group(
    plan: Plan, group: Task, context: dict[str, Any], ex: Executor, scope: Scope
) -> Outcome:
    """Run a branch's children as its plan node says."""
    node = plan.node(group.path)
    if node.dag is not None:
        return await run_graph(group, node, plan.children(group.path), context, ex, scope)
    waves = [[plan.task(path) for path in wave] for wave in node.waves]
    if node.loop is not None:
        return await run_loop(group, node.loop, waves, context, ex, scope)
    return await run_waves(group, waves, context, ex, scope)
