"""The nodes of a plan (Prefect-free): one frozen value per task, the edges the views draw, a
loop's bounds, a graph's DAG, where Dask leaves run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..workflow.tree import Task

if TYPE_CHECKING:
    from ._plan import Plan

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


def timeout_of(task: Task) -> float | None:
    """``settings.timeout`` as a limit: ``-1``, ``0`` and ``null`` mean none."""
    timeout = task.settings.timeout
    return timeout if timeout and timeout > 0 else None
