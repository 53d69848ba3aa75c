"""What a run would do, without calling a model (``folpipe plan``; Prefect-free).

It walks the run's :class:`~prefect_folpipe.compile.plan.Plan` in execution order (a branch's
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
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..expressions import ExpressionError, compile_condition
from ..messages import Usage
from ..workflow.context import checkpoint_inputs, visible_keys
from ..workflow.pricing import UNPRICED_OK, PriceTable
from ..workflow.tree import Task, Workflow
from .cache import cache_key, task_identity
from .contextops import child_context, merge_delta, seed_context
from .manifest import key_parts, read_manifest, what_changed
from .plan import NodePlan, Plan, build_plan

CHARS_PER_TOKEN = 4
ASSUMED_MAX_TOKENS = 1024


@dataclass(frozen=True)
class Pending:
    """A context value that a task which runs would produce (unknown before the run)."""

    producer: str

    def __repr__(self) -> str:
        return f"<from {self.producer or '(root)'}>"


def _pending(values: Mapping[str, Any]) -> dict[str, str]:
    """Keys whose value is :class:`Pending` -> the producing task."""
    return {k: v.producer or "(root)" for k, v in values.items() if isinstance(v, Pending)}


@dataclass
class Step:
    """One agent pass (or a skipped task) in execution order."""

    wave: str
    path: str
    phase: str
    status: str
    reasons: list[str] = field(default_factory=list)
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    model: str | None = None
    iteration: int | None = None
    """The loop iteration (of the innermost loop) this pass belongs to."""
    assumed_output: bool = False
    """No ``max_tokens`` declared: :data:`ASSUMED_MAX_TOKENS` output tokens a call."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "wave": self.wave,
            "path": self.path,
            "phase": self.phase,
            "iteration": self.iteration,
            "status": self.status,
            "reasons": list(self.reasons),
            "estimate": {
                "model_calls": self.model_calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost": None if self.cost is None else round(self.cost, 6),
                "model": self.model,
                "assumed_max_tokens": self.assumed_output,
            },
        }


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


def preview(workflow: Workflow, context: Mapping[str, Any] | None, settings: Settings) -> Preview:
    """What a run of ``workflow`` with ``context`` would do (see the module docstring)."""
    walker = _Walker(build_plan(workflow), workflow, settings)
    walker.node(walker.plan.root, "", seed_context(workflow, context), (1, ()))
    return Preview(workflow.name, walker.steps, walker.budgets())


class _Walker:
    def __init__(self, plan: Plan, workflow: Workflow, settings: Settings) -> None:
        self.plan = plan
        self.workflow = workflow
        self.settings = settings
        self.prices = PriceTable(workflow.root.config.pricing)
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
        if node.loop:
            self._loop(node, wave, inner, delta, at)
        else:
            self._children(node, wave, inner, delta, at)
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

    def _children(
        self, node: NodePlan, wave: str, inner: dict, delta: dict, at: tuple[int, Any]
    ) -> None:
        """One run of a branch's children, wave by wave (the siblings of a wave see the
        context as it was before the wave)."""
        for index, paths in enumerate(self._waves(node), start=1):
            label = f"{wave}.{index}" if wave else str(index)
            base = child_context(inner)
            for path in paths:
                found = self.node(self.plan.node(path), label, child_context(base), at)
                merge_delta(inner, found)
                merge_delta(delta, found)

    def _loop(
        self, node: NodePlan, wave: str, inner: dict, delta: dict, at: tuple[int, Any]
    ) -> None:
        """Iterations while every pass comes from a checkpoint and ``until`` does not hold;
        the first iteration where something runs is estimated for every iteration left."""
        assert node.loop is not None
        repeat, scope = at
        maximum = node.loop.max_iterations or 1
        until = node.loop.until
        for number in range(1, maximum + 1):
            before = len(self.steps)
            times = repeat * (maximum - number + 1)
            self._children(node, wave, inner, delta, (times, (*scope, number)))
            walked = self.steps[before:]
            for step in walked:
                step.iteration = number
            if any(step.status == "runs" for step in walked):
                return
            if until is not None and compile_condition(until).evaluate(inner):
                return

    def _waves(self, node: NodePlan) -> list[tuple[str, ...]]:
        if node.waves:
            return [tuple(w) for w in node.waves]
        if node.dag is not None and node.dag.stages:
            by_name = {self.plan.task(p).name: p for p in node.children}
            top = max(node.dag.stages.values())
            return [
                tuple(by_name[n] for n, s in node.dag.stages.items() if s == stage and n in by_name)
                for stage in range(1, top + 1)
            ]
        return [tuple(node.children)]

    def _skip(self, task: Task, ctx: Mapping[str, Any], wave: str) -> bool:
        condition = task.config.conditions.skip_if
        if condition is None:
            return False
        text = condition if isinstance(condition, str) else json.dumps(condition)
        unknown = {k: p for k, p in _pending(ctx).items() if k in text}
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
        recorded = self._checkpoint(task, phase, ctx, step, at[1])
        if recorded is not None:
            step.status = "checkpoint"
            return recorded
        self._estimate(task, phase, ctx, step, at[0])
        return {key: Pending(task.path) for key in [*task.config.output_keys, task.name]}

    def _checkpoint(
        self, task: Task, phase: str, ctx: Mapping[str, Any], step: Step, scope: tuple[int, ...]
    ) -> dict | None:
        """The recorded delta when the pass would come from its checkpoint (else reasons)."""
        if self.settings.fresh:
            step.reasons.append("--fresh")
            return None
        if not task.settings.cache:
            step.reasons.append("settings.cache: false")
            return None
        pending = _pending(checkpoint_inputs(task, ctx, phase))
        if pending:
            producers = ", ".join(sorted(set(pending.values())))
            step.reasons.append(f"an input ({', '.join(sorted(pending))}) comes from {producers}")
            return None
        salt = self.settings.salt(task)
        identity = task_identity(task)
        key = cache_key(task, identity, ctx, iteration=scope, phase=phase, salt=salt)
        manifest = read_manifest(self.settings.manifests, task.path, phase, scope)
        if manifest is None:
            step.reasons.append("no checkpoint yet")
            return None
        if manifest.get("key") != key:
            now = key_parts(task, ctx, phase=phase, salt=salt)
            step.reasons += what_changed(manifest.get("parts") or {}, now) or ["its key changed"]
            return None
        results = self.settings.results
        if results is not None and not (results / key).exists():
            step.reasons.append("its checkpoint was removed or has expired")
            return None
        return dict(manifest.get("delta") or {})

    def _estimate(
        self, task: Task, phase: str, ctx: Mapping[str, Any], step: Step, repeat: int
    ) -> None:
        if not task.runs_agent:
            return
        keys = visible_keys(task, phase)
        shown = ctx if keys is None else {k: ctx.get(k) for k in keys}  # Pending: ~20 chars
        chars = len(task.system_prompt or "") + len(json.dumps(shown, default=str))
        chars += sum(len(json.dumps(dict(t.parameters))) + len(t.description) for t in task.tools)
        calls = (2 if any(t.executable for t in task.tools) else 1) * repeat
        config = task.provider.config if task.provider else None
        out = config.max_tokens if config and config.max_tokens else ASSUMED_MAX_TOKENS
        step.assumed_output = not (config and config.max_tokens)
        step.model_calls = calls
        step.input_tokens = calls * math.ceil(chars / CHARS_PER_TOKEN)
        step.output_tokens = calls * out
        kind = task.provider.type if task.provider else None
        if self.settings.offline or kind in UNPRICED_OK:
            step.model, step.cost = "(offline)", 0.0
            return
        step.model = task.provider.model if task.provider else None
        usage = Usage(input_tokens=step.input_tokens, output_tokens=step.output_tokens)
        step.cost = self.prices.cost(step.model, usage, kind)

    # -- budgets ---------------------------------------------------------------------------

    def budgets(self) -> list[dict[str, Any]]:
        """Each declared budget with the estimate of its subtree, flagged when exceeded."""
        out = []
        for task in self.workflow.tasks():
            own = task.config.settings
            if own.token_budget is None and own.cost_budget is None:
                continue
            inside = [
                s
                for s in self.steps
                if s.status in ("runs", "maybe skipped")
                and (not task.path or s.path.startswith(task.path))
            ]
            tokens = sum(s.input_tokens + s.output_tokens for s in inside)
            costs = [s.cost for s in inside]
            cost = None if None in costs else sum(c or 0.0 for c in costs)
            over = (own.token_budget is not None and tokens > own.token_budget) or (
                own.cost_budget is not None and cost is not None and cost > own.cost_budget
            )
            out.append(
                {
                    "path": task.path,
                    "token_budget": own.token_budget,
                    "cost_budget": own.cost_budget,
                    "estimated_tokens": tokens,
                    "estimated_cost": None if cost is None else round(cost, 6),
                    "exceeded": over,
                }
            )
        return out
