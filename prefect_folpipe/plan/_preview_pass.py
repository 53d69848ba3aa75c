"""One agent pass in ``folpipe plan``: would it come from its checkpoint, what would it cost."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._messages import Usage
from ..workflow.context import checkpoint_inputs, visible_keys
from ..workflow.pricing import UNPRICED_OK, PriceTable
from ..workflow.tree import Task, Workflow
from ._keys import cache_key, task_identity
from ._manifest import key_parts, read_manifest, what_changed

if TYPE_CHECKING:
    from ._preview import Settings

CHARS_PER_TOKEN = 4
ASSUMED_MAX_TOKENS = 1024


@dataclass(frozen=True)
class Pending:
    """A context value that a task which runs would produce (unknown before the run)."""

    producer: str

    def __repr__(self) -> str:
        return f"<from {self.producer or '(root)'}>"


def pending_keys(values: Mapping[str, Any]) -> dict[str, str]:
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


class PassJudge:
    """Decides, for one pass, checkpoint or run (with reasons), and estimates what runs."""

    def __init__(self, workflow: Workflow, settings: Settings) -> None:
        self.settings = settings
        self.prices = PriceTable(workflow.root.config.pricing)

    def checkpoint(
        self, task: Task, phase: str, ctx: Mapping[str, Any], step: Step, scope: tuple[int, ...]
    ) -> dict | None:
        """The recorded delta when the pass would come from its checkpoint (else reasons)."""
        if self.settings.fresh:
            step.reasons.append("--fresh")
            return None
        if self.settings.rerun is not None and self.settings.rerun(task.path, phase):
            step.reasons.append("--from")
            return None
        if not task.settings.cache:
            step.reasons.append("settings.cache: false")
            return None
        pending = pending_keys(checkpoint_inputs(task, ctx, phase))
        if pending:
            producers = ", ".join(sorted(set(pending.values())))
            step.reasons.append(f"an input ({', '.join(sorted(pending))}) comes from {producers}")
            return None
        salt = self.settings.salt(task)
        identity = task_identity(task)
        key = cache_key(task, identity, ctx, iteration=scope, phase=phase, salt=salt)
        manifest = read_manifest(
            self.settings.manifests, task.path, phase, scope, unseal=self.settings.unseal
        )
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

    def estimate(
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


def budgets(workflow: Workflow, steps: list[Step]) -> list[dict[str, Any]]:
    """Each declared budget with the estimate of its subtree, flagged when exceeded."""
    out = []
    for task in workflow.tasks():
        own = task.config.settings
        if own.token_budget is None and own.cost_budget is None:
            continue
        inside = [
            s
            for s in steps
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
