"""Which task runner runs a pass: Prefect's default (awaited in the flow's process) or Dask;
and a finished run's result forgotten by Prefect's dependency tracking.

The leaf task is the same either way (``compile.leaf``); only how it is started differs. A
directly awaited task bypasses the flow's task runner, so a pass whose task says
``settings.task_runner: dask`` is ``.submit()``-ed to the run's ``DaskTaskRunner`` instead and
its final state awaited without blocking the event loop (``compile.dask``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from prefect.context import FlowRunContext
from prefect.utilities.collections import visit_collection

from ..plan import NodePlan, Plan
from ..plan.execution import Outcome
from ..workflow.tree import Task
from .report import RunTracker
from .shared import RunSpec


class PassRunner(Protocol):
    """Starts one pass's Prefect task and returns its final state."""

    async def run(
        self, leaf: Any, parameters: Mapping[str, Any], wait_for: Sequence[Any]
    ) -> Any: ...

    async def report(self, task: Task, state: Any, outcome: Outcome, tracker: RunTracker) -> None:
        """What the pass's body could not report from where it ran (attempts, usage)."""


class LocalRunner:
    """Prefect's default: the task is awaited in the flow's process (no submission)."""

    async def run(self, leaf: Any, parameters: Mapping[str, Any], wait_for: Sequence[Any]) -> Any:
        return await leaf(**parameters, wait_for=list(wait_for) or None, return_state=True)

    async def report(self, task: Task, state: Any, outcome: Outcome, tracker: RunTracker) -> None:
        return None  # the body reported to the tracker itself


class Runners:
    """The runners of one run, chosen from its plan."""

    def __init__(self, plan: Plan) -> None:
        self.local = LocalRunner()
        self.dask: Any = None
        if plan.dask is not None:
            from .dask import DaskRunner

            self.dask = DaskRunner(plan.dask)

    def check(self) -> None:
        """Raise the ``ConfigError`` a Dask run would meet (FP400, FP607, FP640) up front."""
        if self.dask is not None:
            self.dask.check()

    def for_node(self, node: NodePlan) -> PassRunner:
        if node.task_runner == "dask" and self.dask is not None:
            return self.dask  # type: ignore[no-any-return]
        return self.local

    async def start(self, spec: RunSpec) -> RunSpec:
        """Start the Dask cluster (if any); the spec then carries the run's services actor."""
        if self.dask is None:
            return spec
        return await self.dask.start(spec)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        if self.dask is not None:
            await self.dask.aclose()


def forget_result_links(state: Any) -> None:
    """Drop Prefect's links from a finished run's result to its state.

    Prefect remembers each task result (and its items) by ``id()`` and draws a dependency
    arrow to any later task run given an object with that id. A list or a string cannot be
    checked for identity, so once the result is freed, a new parameter at the same address
    (a pass's ``scope`` list, its label) showed an arrow to a task it never waited for. The
    executor hands states on itself (``wait_for``, a ``graph``'s edges), so nothing is lost.
    """
    context = FlowRunContext.get()
    details = getattr(state, "state_details", None)
    if context is None or details is None:
        return
    run_id = details.task_run_id or details.flow_run_id
    data = getattr(state, "data", None)
    result = getattr(data, "result", data)
    items: list[Any] = []
    visit_collection(result, items.append, return_data=False, max_depth=1)  # as Prefect links
    for item in items:
        entry = context.run_results.get(id(item))
        linked = entry[0].state_details if entry else None
        if linked is not None and run_id in (linked.task_run_id, linked.flow_run_id):
            context.run_results.pop(id(item), None)
