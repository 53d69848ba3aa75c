"""Asking before a tool runs (Prefect-free): a tool with ``approval`` in its metadata gets an
answer for each call before its runner starts.

Who answers is the run's business: ``compile`` binds a ``ToolApprover`` to each agent pass
through ``TOOL_APPROVER`` (the stored answer, ``--approve``, the Prefect UI, a terminal).
An approved call runs with the model's arguments; a declined one does not run and the model
reads why; when nobody can answer (no approver, or the approver raises ``FP530``) the pass
stops: the error carries ``stops_pass`` so the conversation loop lets it through.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import FolpipeError, TaskError
from ..redaction import mask
from ..workflow.toolapproval import (
    ToolApproval,
    approves,
    declined_text,
    parse_tool_approval,
    render_tool_prompt,
)
from ..workflow.tree import ToolSpec


@dataclass(frozen=True)
class ToolGate:
    """One call waiting for its answer."""

    tool: str
    arguments: Mapping[str, Any]
    approval: ToolApproval
    prompt: str
    """The rendered question (secrets masked)."""


class ToolApprover(Protocol):
    """Answers the gates of one agent pass: ``({input key: value}, who answered)``; raises a
    coded error when nobody can answer."""

    async def answer(self, gate: ToolGate) -> tuple[Mapping[str, Any], str]: ...


TOOL_APPROVER: ContextVar[ToolApprover | None] = ContextVar("folpipe_tool_approver", default=None)
"""The approver of the agent pass running in this context (set by ``compile``)."""


def gate_of(
    spec: ToolSpec, arguments: Mapping[str, Any], context: Mapping[str, Any]
) -> ToolGate | None:
    """The gate of a call of ``spec`` (``None``: the tool does not ask)."""
    approval = parse_tool_approval(spec.metadata.get("approval"))
    if approval is None:
        return None
    prompt = mask(render_tool_prompt(approval, spec.name, arguments, context))
    return ToolGate(spec.name, dict(arguments), approval, prompt)


async def decide(gate: ToolGate) -> tuple[bool, str, dict[str, Any]]:
    """``(runs, declined text, the answer and who gave it)`` for one call; raises (with
    ``stops_pass``) when nobody can answer."""
    approver = TOOL_APPROVER.get()
    if approver is None:
        raise stopping(
            TaskError(
                f"tool {gate.tool!r} asks for approval ({gate.prompt!r}) but nobody can "
                "answer: no terminal, no deployment, no --approve",
                code="FP530",
                hint=f"answer ahead with `folpipe run --approve {gate.tool}:approved=yes`, run "
                "in a terminal, or from a deployment to answer in the Prefect UI",
            )
        )
    try:
        answer, source = await approver.answer(gate)
    except FolpipeError as exc:
        raise stopping(exc) from None
    note = {"question": gate.prompt, "answer": dict(answer), "answered_by": source}
    if approves(answer):
        return True, "", note
    return False, mask(declined_text(gate.tool, answer)), note


def stopping(exc: FolpipeError) -> FolpipeError:
    """Mark an error that ends the agent pass (not a tool result the model reads)."""
    exc.stops_pass = True  # type: ignore[attr-defined]
    exc.retryable = False
    return exc
