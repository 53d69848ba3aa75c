"""What an execution type gives: the shape of its plan node, how ``folpipe plan`` walks it, how
``graph`` / ``tree`` show it, and how a run executes it. One subclass per type, registered in
``plan.execution``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ...workflow.tree import Task
from .._nodes import DagPlan, Edge, LoopPlan, NodePlan
from ._outcome import Executor, Outcome, Scope
from ._waves import run_waves

if TYPE_CHECKING:
    from .._plan import Plan

Waves = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Shape:
    """The execution-specific part of a branch's plan node."""

    waves: Waves = ()
    dag: DagPlan | None = None
    loop: LoopPlan | None = None


class PreviewWalker(Protocol):
    """What ``folpipe plan``'s walk offers an execution type (``plan._preview.Preview``)."""

    plan: Plan
    steps: list[Any]

    def children(
        self, node: NodePlan, waves: Waves, wave: str, inner: dict, delta: dict, at: Any
    ) -> None: ...


class ExecutionType:
    """An execution type: ``parallel`` unless a subclass says otherwise."""

    name: ClassVar[str] = ""
    concurrent: ClassVar[bool] = True
    """Whether children may run at once (the views then show ``parallel_workers``)."""

    def shape(self, task: Task) -> Shape:
        """Waves / DAG / loop bounds of a branch of this type (default: one wave)."""
        return Shape(waves=(tuple(child.path for child in task.children),))

    def edges(self, task: Task) -> Iterator[Edge]:
        """The edges between the enabled children that this type implies (default: none)."""
        return iter(())

    def summary(self, node: NodePlan) -> list[str]:
        """Words after the type's name in ``folpipe graph`` and ``tree``."""
        return []

    def child_prefix(self, plan: Plan, parent: NodePlan, child: NodePlan, index: int) -> str:
        """What the text graph writes before an enabled child's name."""
        return ""

    def preview_waves(self, plan: Plan, node: NodePlan) -> Waves:
        """The waves ``folpipe plan`` walks (siblings of a wave see the same context)."""
        return node.waves or (tuple(node.children),)

    def preview(
        self, walker: PreviewWalker, node: NodePlan, wave: str, inner: dict, delta: dict, at: Any
    ) -> None:
        """Walk one run of the children for ``folpipe plan``."""
        walker.children(node, self.preview_waves(walker.plan, node), wave, inner, delta, at)

    async def run(
        self, plan: Plan, group: Task, context: dict[str, Any], ex: Executor, scope: Scope
    ) -> Outcome:
        """Run the children of ``group`` as its plan node says."""
        waves = [[plan.task(path) for path in wave] for wave in plan.node(group.path).waves]
        return await run_waves(group, waves, context, ex, scope)


def one_wave_each(task: Task) -> Waves:
    """One child per wave, in run order (``sequential``, an iteration of ``loop``)."""
    return tuple((child.path,) for child in task.children)


def condition_text(condition: str | dict[str, Any] | None) -> str:
    """A skip_if / until condition as one line (structured forms in a compact notation)."""
    if condition is None:
        return ""
    if isinstance(condition, str):
        return " ".join(condition.split())
    return _structured_condition_text(condition)


def _structured_condition_text(condition: dict[str, Any]) -> str:
    for combinator in ("all", "any"):
        if combinator in condition and isinstance(condition[combinator], list):
            inner = ", ".join(condition_text(item) for item in condition[combinator])
            return f"{combinator}({inner})"
    key = condition.get("key", "?")
    for operator, value in condition.items():
        if operator == "key":
            continue
        if operator in ("exists", "not_exists"):
            return f"{key} {operator}"
        return f"{key} {operator} {value!r}"
    return str(key)
