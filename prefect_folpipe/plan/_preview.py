"""What a run would do, without calling a model (``folpipe plan``; Prefect-free).

It walks the run's :class:`~prefect_folpipe.plan._plan.Plan` in execution order (a branch's
waves, a graph's stages, one loop iteration) with the context the run would start from, and
for each agent pass says:

* ``checkpoint``: its key (``compile.cache``) matches the last finished pass's manifest and the
  result is still stored, so it would come back from the checkpoint; its recorded output
  feeds the context of what follows;
* ``runs``: and why: never ran, which file / tool / provider / input changed since
  (``compile.manifest.what_changed``), an upstream that runs produces one of its inputs, or
  ``--fresh`` / ``settings.cache: false``;
* ``skipped``: its ``skip_if`` holds on that context (``maybe skipped`` when the condition
  reads outputs of tasks that run).

Each pass that runs gets a cost estimate: model calls (1, plus 1 with tools; times
``max_iterations`` in a loop), input tokens from the prompt and input size (~4 characters a
token), output tokens from the declared ``max_tokens`` (1024 when not declared), priced with
``workflow.pricing``; ``token_budget`` / ``cost_budget`` of a task are checked against the
estimate of its subtree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._process.depth import room_for_levels
from ..expressions import ExpressionError, compile_condition
from ..workflow.tree import Task, Workflow
from ._nodes import NodePlan
from ._plan import Plan, build_plan
from ._preview_pass import PassJudge, Pending, Step, budgets, pending_keys
from .contextops import child_context, merge_delta, seed_context
from .execution import Waves, execution_type

__all__ = ["Pending", "Preview", "Settings", "Step", "preview"]


@dataclass
class Preview:
    """Every step, the totals and the budgets the estimate exceeds."""

    workflow: str
    steps: list[Step]
    budgets: list[dict[str, Any]]

    def totals(self) -> dict[str, Any]:
        running = [s for s in self.steps if s.status in ("runs", "maybe skipped")]
        costs = [s.cost for s in running]
        return {
            "passes": len(self.steps),
            "from_checkpoints": sum(s.status == "checkpoint" for s in self.steps),
            "runs": len(running),
            "skipped": sum(s.status == "skipped" for s in self.steps),
            "model_calls": sum(s.model_calls for s in running),
            "input_tokens": sum(s.input_tokens for s in running),
            "output_tokens": sum(s.output_tokens for s in running),
            "cost": None if None in costs else round(sum(c or 0.0 for c in costs), 6),
            "unpriced_models": sorted({s.model or "?" for s in running if s.cost is None}),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "steps": [s.to_dict() for s in self.steps],
            "totals": self.totals(),
            "budgets": self.budgets,
        }


@dataclass
class Settings:
    """How the run would be started."""

    manifests: Path
    results: Path | None
    """Folder result storage (``None``: a storage block; manifests are trusted)."""
    salt: Any
    """``provider_salt``-like callable ``(task) -> str``."""
    fresh: bool = False
    offline: bool = False
    """Every task answers from a scripted/replay provider: calls cost nothing."""
    rerun: Any = None
    """``(path, phase) -> bool``: the passes a ``--from`` run asks again (``compile.rerun``)."""
    unseal: Any = None
    """Checks a manifest's signature (``compile.storekey.unseal``); ``None``: not checked."""


def preview(workflow: Workflow, context: Mapping[str, Any] | None, settings: Settings) -> Preview:
    """What a run of ``workflow`` with ``context`` would do (see the module docstring)."""
    walker = _Walker(build_plan(workflow), workflow, settings)
    levels = max(task.path.count("/") + 1 for task in workflow.tasks())
    with room_for_levels(levels):  # the walk recurses per level of the tree
        walker.node(walker.plan.root, "", seed_context(workflow, context), (1, ()))
    return Preview(workflow.name, walker.steps, budgets(workflow, walker.steps))


class _Walker:
    def __init__(self, plan: Plan, workflow: Workflow, settings: Settings) -> None:
        self.plan = plan
        self.workflow = workflow
        self.settings = settings
        self.judge = PassJudge(workflow, settings)
        self.steps: list[Step] = []

    # -- walking ---------------------------------------------------------------------------

    def node(self, node: NodePlan, wave: str, ctx: dict[str, Any], at: tuple[int, Any]) -> dict:
        """Walk one task; return the delta it adds to its parent's context. ``at``: how often
        it runs at most (loops), and its loop scope (the first iteration of each loop)."""
        task = self.plan.task(node.path)
        before = len(self.steps)
        skipped = self._skip(task, ctx, wave) if node.path else None
        if skipped:
            return {}
        maybe = self.steps[before:]  # a "maybe skipped" note: its passes take it over
        del self.steps[before:]
        delta: dict[str, Any] = {}
        if not node.is_branch:
            found = self.agent_pass(task, "single", ctx, wave, at)
            self._note(before, maybe)
            return found
        inner = child_context(ctx)
        if "first" in node.passes:
            merge_delta(delta, self.agent_pass(task, "first", inner, wave, at))
            merge_delta(inner, delta)
        self._note(before, maybe)
        assert node.execution_type is not None
        execution_type(node.execution_type).preview(self, node, wave, inner, delta, at)
        if "final" in node.passes:
            merge_delta(delta, self.agent_pass(task, "final", inner, wave, at))
        return delta

    def _note(self, index: int, maybe: list[Step]) -> None:
        """Put a "maybe skipped" note on the pass at ``index`` (or keep it as its own row)."""
        if not maybe:
            return
        if index < len(self.steps) and self.steps[index].path == maybe[0].path:
            step = self.steps[index]
            step.reasons = [*maybe[0].reasons, *step.reasons]
            if step.status == "runs":
                step.status = "maybe skipped"
        else:
            self.steps[index:index] = maybe

    def children(
        self, node: NodePlan, waves: Waves, wave: str, inner: dict, delta: dict, at: Any
    ) -> None:
        """One run of a branch's children, wave by wave (the siblings of a wave see the
        context as it was before the wave)."""
        for index, paths in enumerate(waves, start=1):
            label = f"{wave}.{index}" if wave else str(index)
            base = child_context(inner)
            for path in paths:
                found = self.node(self.plan.node(path), label, child_context(base), at)
                merge_delta(inner, found)
                merge_delta(delta, found)

    def _skip(self, task: Task, ctx: Mapping[str, Any], wave: str) -> bool:
        condition = task.config.conditions.skip_if
        if condition is None:
            return False
        text = condition if isinstance(condition, str) else json.dumps(condition)
        unknown = {k: p for k, p in pending_keys(ctx).items() if k in text}
        approval = task.config.approval
        asked = sorted(key for key in (approval.input if approval else {}) if key in text)
        if asked:  # the answer is given at run time: the plan cannot know it
            reason = f"skip_if reads {', '.join(asked)}, the answer of its approval gate"
            self.steps.append(Step(wave, task.path, "-", "maybe skipped", [reason]))
            return False
        if unknown:
            producers = ", ".join(sorted(set(unknown.values())))
            reason = f"skip_if reads {', '.join(sorted(unknown))}, produced by {producers}"
            self.steps.append(Step(wave, task.path, "-", "maybe skipped", [reason]))
            return False
        try:
            holds = compile_condition(condition).evaluate(ctx)
        except ExpressionError as exc:
            self.steps.append(Step(wave, task.path, "-", "maybe skipped", [str(exc)]))
            return False
        if holds:
            for sub in self.plan.walk(task.path):
                self.steps.append(Step(wave, sub.path, "-", "skipped", [f"skip_if: {text}"]))
        return holds

    # -- one pass --------------------------------------------------------------------------

    def agent_pass(
        self, task: Task, phase: str, ctx: Mapping[str, Any], wave: str, at: tuple[int, Any]
    ) -> dict:
        if not task.runs_agent and not task.hooks:
            return {}
        step = Step(wave, task.path, phase, "runs")
        self.steps.append(step)
        recorded = self.judge.checkpoint(task, phase, ctx, step, at[1])
        if recorded is not None:
            step.status = "checkpoint"
            return recorded
        self.judge.estimate(task, phase, ctx, step, at[0])
        return {key: Pending(task.path) for key in [*task.config.output_keys, task.name]}
