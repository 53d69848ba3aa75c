"""Tool-call gates at run time: the ``tools.approval.ToolApprover`` of one agent pass.

A call's answer comes, in order, from the stored answer of the same call (same task pass,
tool name and exact arguments: a resumed run never asks twice), ``--approve TOOL:key=value``
(or ``TASK/TOOL:...``, or a bare ``key=value`` for every gate), a deployment's suspension
(the Prefect UI form), a terminal, else FP530. A deadline with ``on_timeout`` answers by
itself, recorded as defaulted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...plan import cache_key
from ...plan.failures import ApprovalFailed
from ...tools.approval import ToolGate
from ...workflow.names import slug
from ...workflow.tree import Task
from ._question import Question, checked_answer

if TYPE_CHECKING:
    from ._gate import ApprovalGates

ANY = ""


class PassToolGates:
    """The tool gates of one agent pass, answered through the run's ``ApprovalGates``."""

    def __init__(
        self,
        gates: ApprovalGates,
        task: Task,
        phase: str,
        scope: tuple[int, ...],
        context: Mapping[str, Any],
    ) -> None:
        self.gates = gates
        self.task = task
        self.phase = phase
        self.scope = scope
        self.context = context
        """The pass's input context (part of each answer's key)."""

    async def answer(self, gate: ToolGate) -> tuple[Mapping[str, Any], str]:
        question = self.question(gate)
        key = self._key(gate, question)
        target = f"{self.task.path or 'root'}/{gate.tool}"
        saved = await self.gates.read(f"approvals/{key}.json")
        if isinstance(saved, dict) and isinstance(saved.get("answer"), dict):
            note = self.gates.note(target, "tool", question, saved["answer"], "stored", saved)
            return dict(saved["answer"]), f"stored ({note['answered_by']})"
        answer = self._preset(gate, question)
        source = "--approve"
        if answer is None:
            pause = f"folpipe-tool-{slug(self.task.path or 'root', limit=60)}-{key[-12:]}"
            answer, source = await self.gates.wait_for(question, key, pause)
        record = self.gates.note(target, "tool", question, answer, source)
        await self.gates.write(f"approvals/{key}.json", record)
        return answer, source

    def question(self, gate: ToolGate) -> Question:
        label = f"{self.task.path or 'root'}{''.join(f'[{i}]' for i in self.scope)}"
        return Question(
            self.task.path,
            label,
            gate.prompt,
            dict(gate.approval.fields),
            gate.approval.timeout,
            gate.approval.on_timeout,
            tool=gate.tool,
            notify=gate.approval.notify,
        )

    def _key(self, gate: ToolGate, question: Question) -> str:
        asked = json.dumps(
            [gate.tool, dict(gate.arguments), question.prompt, _plain(question.fields)],
            sort_keys=True,
            default=str,
        )
        keys = self.gates.keys
        digest = hashlib.sha256(asked.encode()).hexdigest()
        salt = f"{keys.salt(self.task)}{keys.reach(self.task)}|tool|{digest}"
        return cache_key(
            self.task,
            keys.identity(self.task),
            self.context,
            iteration=self.scope,
            phase=f"tool-approval-{self.phase}",
            salt=salt,
        )

    def _preset(self, gate: ToolGate, question: Question) -> dict[str, Any] | None:
        presets = self.gates.presets
        given = {
            **presets.get(ANY, {}),
            **presets.get(gate.tool, {}),
            **presets.get(f"{self.task.name}/{gate.tool}", {}),
            **presets.get(f"{self.task.path}/{gate.tool}", {}),
        }
        relevant = {key: value for key, value in given.items() if key in question.fields}
        if not relevant:
            return None
        if "approved" in question.fields and "approved" not in relevant:
            return None  # e.g. `--approve comment=...` alone answers nothing here
        return checked_answer(question, _with_blanks(question, relevant), "--approve")


def _with_blanks(question: Question, given: Mapping[str, Any]) -> dict[str, Any]:
    """A preset that answers ``approved`` may leave text keys (a reason) empty."""
    return {
        **{key: "" for key, kind in question.fields.items() if kind == "str"},
        **given,
    }


def _plain(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: list(kind) if isinstance(kind, tuple) else kind for key, kind in fields.items()}


def no_answer(question: Question) -> ApprovalFailed:
    return ApprovalFailed(
        f"{question.describe()}: nobody can answer (no terminal, no deployment, no --approve)",
        hint=f"answer ahead with `folpipe run --approve {question.tool}:approved=yes`, run "
        "`folpipe run` in a terminal, or run the workflow from a deployment",
    )
