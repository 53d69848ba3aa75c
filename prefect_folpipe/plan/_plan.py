"""The plan: how a loaded workflow runs, as a frozen, printable value (Prefect-free).

``build_plan(workflow)`` decides, once, everything about the shape of a run: per branch its
execution type and how its children run (waves for ``parallel`` / ``sequential`` /
``priority_groups`` / ``loop``, the DAG of a ``graph``), the loop bounds, the edges the views
draw; per task its agent passes (``single``, or ``first`` + ``final`` around its children),
how a branch maps onto Prefect (``branch_as``), its task runner, and the disabled children in
the order they are reported. ``folpipe graph``, ``folpipe tree``, the run report and the
execution all read this plan, so the picture matches the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..workflow.tree import Task, Workflow
from ._nodes import DEFAULT_BRANCH_AS, DaskPlan, Edge, NodePlan, Phase, timeout_of
from .execution import execution_type


@dataclass(frozen=True)
class Plan:
    """How a workflow runs: every task's node, root first; Prefect-free and printable."""

    workflow: str
    nodes: Mapping[str, NodePlan]
    dask: DaskPlan | None = None
    tasks: Mapping[str, Task] = field(default_factory=dict, repr=False, compare=False)
    """The loaded task of each path (for the executor and the views; not printed)."""
    declared_outputs: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    """Every key some task declares as an output (``Workflow.declared_outputs``)."""

    def node(self, path: str) -> NodePlan:
        return self.nodes[path]

    def task(self, path: str) -> Task:
        return self.tasks[path]

    @property
    def root(self) -> NodePlan:
        return self.nodes[""]

    def children(self, path: str) -> list[Task]:
        """The enabled children of ``path``, in run order."""
        return [self.tasks[child] for child in self.nodes[path].children]

    def walk(self, path: str = "") -> Iterator[NodePlan]:
        """The node at ``path`` and its descendants (disabled ones included), depth first."""
        node = self.nodes[path]
        yield node
        for child in node.all_children:
            yield from self.walk(child)

    def edges(self) -> list[Edge]:
        return [edge for node in self.walk() for edge in node.edges]

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-friendly data (golden tests, ``folpipe graph --json`` reads it)."""
        data: dict[str, Any] = {"workflow": self.workflow, "root": self.root.to_dict(self)}
        if self.dask is not None:
            data["dask"] = {
                "address": self.dask.address,
                "workers": self.dask.workers,
                "problem": self.dask.problem,
            }
        data["edges"] = [edge.to_dict() for edge in self.edges()]
        return data

    def to_mermaid(self) -> str:
        from ._views import plan_to_mermaid

        return plan_to_mermaid(self)

    def to_text(self) -> str:
        from ._views import plan_to_text

        return plan_to_text(self)


# --------------------------------------------------------------------------- building


def build_plan(workflow: Workflow) -> Plan:
    """The plan of a loaded workflow (never raises: broken DAGs are recorded per branch)."""
    nodes: dict[str, NodePlan] = {}
    tasks: dict[str, Task] = {}
    root = workflow.root
    _add(root, root.config.enabled, nodes, tasks)
    dask = _dask_plan(root, tasks, nodes)
    return Plan(workflow.name, nodes, dask, tasks, workflow.declared_outputs)


def _add(task: Task, enabled: bool, nodes: dict[str, NodePlan], tasks: dict[str, Task]) -> None:
    disabled = sorted(task.disabled_children, key=lambda child: (child.priority, child.folder.name))
    tasks[task.path] = task
    nodes[task.path] = _node(task, enabled, disabled)
    for child in task.children:
        _add(child, enabled, nodes, tasks)
    for child in disabled:
        _add(child, False, nodes, tasks)


def _node(task: Task, enabled: bool, disabled: list[Task]) -> NodePlan:
    base: dict[str, Any] = {
        "path": task.path,
        "name": task.name,
        "kind": task.kind,
        "enabled": enabled,
        "task_runner": task.settings.task_runner,
        "timeout": timeout_of(task),
        "disabled": tuple(child.path for child in disabled),
    }
    if not task.children:
        return NodePlan(passes=("single",), **base)
    kind = execution_type(task.execution_type)
    shape = kind.shape(task)
    return NodePlan(
        passes=branch_passes(task),
        children=tuple(child.path for child in task.children),
        execution_type=task.execution_type,
        branch_as=task.settings.branch_as or DEFAULT_BRANCH_AS,
        parallel_workers=task.settings.parallel_workers,
        on_error=task.on_error,
        waves=shape.waves,
        dag=shape.dag,
        loop=shape.loop,
        edges=tuple(kind.edges(task)) if enabled else (),
        **base,
    )


def branch_passes(task: Task) -> tuple[Phase, ...]:
    """The agent passes around a branch's children (its instructions, or its hooks)."""
    passes: list[Phase] = []
    if task.runs_agent or "pre_run" in task.hooks:
        passes.append("first")
    if task.runs_agent or "post_run" in task.hooks:
        passes.append("final")
    return tuple(passes)


def _dask_plan(
    root: Task, tasks: Mapping[str, Task], nodes: Mapping[str, NodePlan]
) -> DaskPlan | None:
    users = [
        tasks[path] for path, node in nodes.items() if node.enabled and node.task_runner == "dask"
    ]
    if not users:
        return None
    addresses = sorted({task.settings.dask_address or "" for task in users})
    problem = None
    if len(addresses) > 1:
        shown = ", ".join(repr(address or "local cluster") for address in addresses)
        problem = f"tasks with task_runner: dask name different clusters ({shown}); a run uses one"
    return DaskPlan(addresses[0] or None, root.settings.parallel_workers, problem)
