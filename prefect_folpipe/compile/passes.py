"""What a leaf's pass needs from the process running it (``PassRuntime``), and what it returns
(``Payload``): the flow's process reports to the run (``FlowRuntime``); a Dask worker rebuilds a
runtime of its own (``compile.dask``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypedDict

from ..agent.journal import Journal
from ..plan import task_identity
from ..plan.failures import ResultNotSerializable
from ..workflow.tree import Task, Workflow
from .checkpoints import journal_for
from .options import ArtifactLevel
from .report import RunTracker, artifacts
from .shared import RunSpec, Services, provider_salt


class Payload(TypedDict):
    """What one executed pass returns and checkpoints."""

    delta: dict[str, Any]
    text: str
    usage: dict[str, int]
    model_calls: int
    replayed_calls: int
    replayed_tokens: int
    tool_calls: int
    cost: float
    provider: str | None
    model: str | None


def payload_of(outcome: Any) -> Payload:
    """The checkpointed part of an ``agent.TaskOutcome`` (plain data)."""
    usage = getattr(outcome, "usage", None)
    replayed = getattr(outcome, "replayed_usage", None)
    return {
        "delta": dict(outcome.delta),
        "text": getattr(outcome, "text", ""),
        "usage": usage.to_dict() if hasattr(usage, "to_dict") else dict(usage or {}),
        "model_calls": getattr(outcome, "model_calls", 0),
        "replayed_calls": getattr(outcome, "replayed_calls", 0),
        "replayed_tokens": getattr(replayed, "total_tokens", 0),
        "tool_calls": getattr(outcome, "tool_calls", 0),
        "cost": getattr(outcome, "cost", 0.0),
        "provider": getattr(outcome, "provider", None),
        "model": getattr(outcome, "model", None),
    }


def check_serialisable(task: Task, payload: Payload) -> None:
    """FP515 for an output that cannot be checkpointed as JSON."""
    try:
        json.dumps(payload)
    except (TypeError, ValueError) as exc:
        raise ResultNotSerializable(
            f"task '{task.path}' produced an output that cannot be checkpointed as JSON: {exc}"
        ) from None


class PassRuntime:
    """What a pass needs from the process running it: tasks, services, where reports go."""

    artifact_level: ArtifactLevel

    def __init__(
        self, workflow: Workflow, spec: RunSpec, services: Services, runner: Callable[..., Any]
    ) -> None:
        self.workflow = workflow
        self.spec = spec
        self.services = services
        self.runner = runner
        self.artifact_level = spec.artifacts
        self._tasks = {task.path: task for task in workflow.tasks()}
        self._identities: dict[str, str] = {}
        self._salts: dict[str, str] = {}

    def task(self, path: str) -> Task:
        return self._tasks[path]

    def identity(self, task: Task) -> str:
        found = self._identities.get(task.path)
        if found is None:
            found = self._identities[task.path] = task_identity(task)
        return found

    def salt(self, task: Task) -> str:
        """Who answers ``task``, for its keys (issue 11 point 8: the scripted replies /
        cassette turns answering it count); once per task and run, like its identity."""
        found = self._salts.get(task.path)
        if found is None:
            found = self._salts[task.path] = provider_salt(task, self.spec.override, self.workflow)
        return found

    def journal(self, task: Task, phase: str, scope: list | None) -> Journal | None:
        """The model-call journal of one pass (``None`` without an agent or checkpoints)."""
        if not task.runs_agent:
            return None
        return journal_for(self.spec, task, phase, scope, self.salt(task) + self.reach(task, phase))

    def reach(self, task: Task, phase: str = "single") -> str:
        """How far the task's checkpoints reach (``compile.scope``): ``""`` when runs share
        them, else the run's lineage. Its journal and its gate's answer reach as far."""
        return self.spec.checkpoints.salt(task, phase)

    def tool_approver(
        self, task: Task, phase: str, scope: list | None, context: dict[str, Any]
    ) -> Any:
        """Who answers the tool gates of one pass (``None``: nobody, FP530; a Dask worker)."""
        return None

    async def attempt(self, task: Task, number: int) -> None:
        """An attempt of ``task``'s pass starts."""

    def charge(self, task: Task, payload: Payload) -> None:
        """An executed pass's usage, for the run report."""

    def observe(self, task: Task, phase: str, scope: list | None, outcome: Any) -> None:
        """An executed pass's conversation, for the run's history (``compile.history``)."""

    async def publish(
        self, task: Task, phase: str, label: str, outcome: Any, payload: Payload
    ) -> None:
        """The pass's markdown artifact."""

    async def publish_failure(
        self, task: Task, phase: str, label: str, error: BaseException, attempt: int
    ) -> None:
        """The failed pass's markdown artifact."""


class FlowRuntime(PassRuntime):
    """Passes in the flow's process: they report to the run's tracker and queue their
    artifacts on the background writer."""

    def __init__(
        self,
        workflow: Workflow,
        spec: RunSpec,
        services: Services,
        runner: Callable[..., Any],
        tracker: RunTracker,
    ) -> None:
        super().__init__(workflow, spec, services, runner)
        self.tracker = tracker
        self.gates: Any = None
        """The run's ``approvals.ApprovalGates`` (set when the run starts)."""

    def tool_approver(
        self, task: Task, phase: str, scope: list | None, context: dict[str, Any]
    ) -> Any:
        if self.gates is None:
            return None
        return self.gates.tool_gates(task, phase, tuple(scope or ()), context)

    async def attempt(self, task: Task, number: int) -> None:
        self.tracker.attempt(task.path, number)

    def charge(self, task: Task, payload: Payload) -> None:
        self.tracker.charge(task.path, payload)

    def observe(self, task: Task, phase: str, scope: list | None, outcome: Any) -> None:
        from .history import pass_entry

        self.tracker.passes.append(pass_entry(task, phase, scope, outcome))

    async def publish(
        self, task: Task, phase: str, label: str, outcome: Any, payload: Payload
    ) -> None:
        artifacts.queue_task_artifact(self.workflow.name, task, phase, label, outcome, payload)

    async def publish_failure(
        self, task: Task, phase: str, label: str, error: BaseException, attempt: int
    ) -> None:
        artifacts.queue_failure_artifact(self.workflow.name, task, phase, label, error, attempt)
