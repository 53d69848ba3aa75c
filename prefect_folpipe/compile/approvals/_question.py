"""What an approval gate asks, and what makes an answer acceptable (Prefect-free)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...plan.failures import ApprovalFailed, ApprovalTimedOut
from ...workflow.approval import FieldType, coerce


@dataclass(frozen=True)
class Question:
    """What a gate asks: shown in a terminal, or as the Prefect UI's form."""

    task_path: str
    label: str
    prompt: str
    fields: Mapping[str, FieldType]
    timeout: float | None
    default: Mapping[str, Any] | None = None
    """``on_timeout``: the answer taken when ``timeout`` passes."""
    tool: str | None = None
    """The tool whose call is asked about (``None``: the task itself)."""
    notify: tuple[str, ...] = ()
    """``approval.notify``: the Prefect notification blocks told when the gate starts
    waiting."""

    def describe(self) -> str:
        if self.tool:
            return f"approval of a call of tool {self.tool!r} (task {self.label!r}): {self.prompt}"
        return f"approval for task {self.label!r}: {self.prompt}"


Asker = Callable[[Question], Mapping[str, Any]]
"""Asks a person (blocking, e.g. on a terminal); returns the raw answer."""


def timed_out(question: Question) -> ApprovalTimedOut:
    return ApprovalTimedOut(
        f"task {question.label!r}: nobody answered the approval ({question.prompt!r}) within "
        f"{question.timeout:g}s",
        hint="answer sooner, raise approval.timeout, or set the task's on_failure",
    )


def checked_answer(question: Question, raw: Mapping[str, Any], source: str) -> dict[str, Any]:
    try:
        return coerce(question.fields, raw)
    except ValueError as exc:
        raise ApprovalFailed(
            f"task {question.label!r}: the approval answer from {source} does not fit the form: "
            f"{exc}",
            hint="answer every key of approval.input with a value of its type",
        ) from None


def now() -> float:
    return time.time()
