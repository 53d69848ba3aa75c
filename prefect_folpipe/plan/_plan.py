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

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, Literal

from ..workflow.graph import DagError, check_dag, unknown_upstreams
from ..workflow.tree import Task, Workflow

DEFAULT_BRANCH_AS = "task"
EdgeKind = Literal["order", "depends_on", "group", "next_iteration"]
Phase = Literal["single", "first", "final"]


@dataclass(frozen=True)
class Edge:
    """``target`` starts after ``source`` (``next_iteration``: the loop goes round again)."""

    source: str
    target: str
    kind: EdgeKind
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "kind": self.kind,
            "label": self.label or None,
        }


@dataclass(frozen=True)
class LoopPlan:
    """The bounds of a ``loop`` branch."""

    until: str | Mapping[str, Any] | None
    max_iterations: int | None
    iteration_timeout: float | None
    on_max_iterations: str
    timeout: float | None
    """``settings.timeout`` of the loop task: bounds the whole loop."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "until": self.until,
            "max_iterations": self.max_iterations,
            "iteration_timeout": self.iteration_timeout,
            "on_max_iterations": self.on_max_iterations,
            "timeout": self.timeout,
        }


@dataclass(frozen=True)
class DagPlan:
    """The ``depends_on`` DAG of a ``graph`` branch, over child names."""

    upstreams: Mapping[str, tuple[str, ...]]
    """Direct upstreams among the enabled siblings (names of disabled ones are dropped)."""
    ancestors: Mapping[str, tuple[str, ...]]
    """Transitive upstreams, in sibling order (what a child's context is merged from)."""
    stages: Mapping[str, int]
    """1 = no upstream; empty when the edges are broken."""
    problem: str | None = None
    """An unknown sibling or a cycle: the run fails with FP401 when it reaches the branch."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "upstreams": {name: list(ups) for name, ups in self.upstreams.items()},
            "stages": dict(self.stages),
            "problem": self.problem,
        }


@dataclass(frozen=True)
class NodePlan:
    """One task of the plan: what runs, and (for a branch) how its children run."""

    path: str
    name: str
    kind: str
    """``leaf`` / ``branch`` / ``both`` (a task whose children are all disabled is a leaf)."""
    enabled: bool
    passes: tuple[Phase, ...]
    """Agent passes: ``("single",)`` for a leaf; ``first`` / ``final`` around a branch's
    children when it has instructions (or a ``pre_run`` / ``post_run`` hook)."""
    timeout: float | None
    """``settings.timeout`` (``None``: no limit): per attempt of a pass; a loop's whole run."""
    task_runner: str
    children: tuple[str, ...] = ()
    """Paths of the enabled children, in run order."""
    disabled: tuple[str, ...] = ()
    """Paths of the disabled children, in the order they are reported (after the others)."""
    execution_type: str | None = None
    branch_as: str | None = None
    parallel_workers: int | None = None
    on_error: str | None = None
    waves: tuple[tuple[str, ...], ...] = ()
    """``parallel`` / ``sequential`` / ``priority_groups`` / ``loop`` (one iteration): children
    in waves; a wave runs in parallel, waves one after another."""
    dag: DagPlan | None = None
    loop: LoopPlan | None = None
    edges: tuple[Edge, ...] = ()

    @property
    def is_branch(self) -> bool:
        return bool(self.children)

    def to_dict(self, plan: Plan) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "name": self.name,
            "kind": self.kind,
            "enabled": self.enabled,
            "passes": list(self.passes),
            "timeout": self.timeout,
            "task_runner": self.task_runner,
        }
        if self.is_branch:
            data["branch_as"] = self.branch_as
            data["execution"] = self._execution_dict()
        data["children"] = [plan.node(path).to_dict(plan) for path in self.all_children]
        return data

    def _execution_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.execution_type,
            "parallel_workers": self.parallel_workers,
            "on_error": self.on_error,
        }
        if self.waves:
            data["waves"] = [list(wave) for wave in self.waves]
        if self.dag is not None:
            data["dag"] = self.dag.to_dict()
        if self.loop is not None:
            data["loop"] = self.loop.to_dict()
        return data

    @property
    def all_children(self) -> tuple[str, ...]:
        """Enabled children in run order, then disabled ones."""
        return (*self.children, *self.disabled)


@dataclass(frozen=True)
class DaskPlan:
    """Where the leaves with ``settings.task_runner: dask`` run."""

    address: str | None
    """A scheduler address, or ``None`` for a local cluster."""
    workers: int | None
    """Worker processes of a local cluster (the root's ``parallel_workers``)."""
    problem: str | None = None
    """Tasks disagree on ``dask_address`` (a run uses one cluster)."""


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
    kind = task.execution_type
    return NodePlan(
        passes=branch_passes(task),
        children=tuple(child.path for child in task.children),
        execution_type=kind,
        branch_as=task.settings.branch_as or DEFAULT_BRANCH_AS,
        parallel_workers=task.settings.parallel_workers,
        on_error=task.on_error,
        waves=_waves(task) if kind != "graph" else (),
        dag=dag_plan(task) if kind == "graph" else None,
        loop=_loop(task) if kind == "loop" else None,
        edges=tuple(branch_edges(task)) if enabled else (),
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


def _waves(task: Task) -> tuple[tuple[str, ...], ...]:
    children = task.children
    kind = task.execution_type
    if kind in ("sequential", "loop"):
        return tuple((child.path,) for child in children)
    if kind == "priority_groups":
        return tuple(tuple(child.path for child in wave) for wave in priority_waves(children))
    return (tuple(child.path for child in children),)


def priority_waves(children: tuple[Task, ...] | list[Task]) -> list[list[Task]]:
    """Children grouped by priority, lowest first (sibling order within a group)."""
    ordered = sorted(children, key=lambda child: child.priority)
    return [list(members) for _, members in groupby(ordered, key=lambda child: child.priority)]


def dag_plan(task: Task) -> DagPlan:
    """The DAG of a ``graph`` branch over its enabled children."""
    names = {child.name for child in task.children}
    off = {child.name for child in task.disabled_children}
    upstreams = {
        child.name: tuple(up for up in child.config.depends_on if up not in off)
        for child in task.children
    }
    known = {name: tuple(up for up in ups if up in names) for name, ups in upstreams.items()}
    problem = None
    unknown = unknown_upstreams(upstreams)
    if unknown:
        name, up = unknown[0]
        problem = f"task '{name}' depends on '{up}', which is not a sibling"
    try:
        dag = check_dag(known)
    except DagError as exc:
        return DagPlan(known, {name: () for name in known}, {}, problem or str(exc))
    return DagPlan(known, dag.ancestors, dag.stages, problem)


def timeout_of(task: Task) -> float | None:
    """``settings.timeout`` as a limit: ``-1``, ``0`` and ``null`` mean none."""
    timeout = task.settings.timeout
    return timeout if timeout and timeout > 0 else None


def _loop(task: Task) -> LoopPlan:
    sub = task.config.subtasks
    assert sub is not None
    return LoopPlan(
        until=sub.until,
        max_iterations=sub.max_iterations,
        iteration_timeout=sub.iteration_timeout,
        on_max_iterations=sub.on_max_iterations,
        timeout=timeout_of(task),
    )


def branch_edges(task: Task) -> Iterator[Edge]:
    """The edges between a branch's enabled children implied by its execution type."""
    children = list(task.children)
    kind = task.execution_type
    if kind in ("sequential", "loop"):
        yield from (Edge(a.path, b.path, "order") for a, b in itertools.pairwise(children))
    if kind == "loop" and children:
        sub = task.config.subtasks
        bound = f"max {sub.max_iterations}" if sub and sub.max_iterations else "unbounded"
        label = f"next iteration ({bound})"
        yield Edge(children[-1].path, children[0].path, "next_iteration", label)
    if kind == "graph":
        by_name = {child.name: child for child in children}
        for child in children:
            for dep in child.config.depends_on:
                if dep in by_name:
                    yield Edge(by_name[dep].path, child.path, "depends_on")
    if kind == "priority_groups":
        for before, after in itertools.pairwise(priority_waves(children)):
            yield from (Edge(a.path, b.path, "group") for a in before for b in after)


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
