"""What running one task folder produces (Prefect-free, picklable)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._messages import Usage


@dataclass
class TaskOutcome:
    """Result of one agent pass over a task (and its hooks).

    ``delta`` is what the parent merges into its context: declared output keys at the top level
    *and* under the task's name (or the full text under the task's name when nothing is
    declared), plus keys the task's hooks added or changed.
    """

    delta: dict[str, Any]
    text: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    """Paid model calls; calls answered from the journal are ``replayed_calls``."""
    replayed_calls: int = 0
    replayed_usage: Usage = field(default_factory=Usage)
    tool_calls: int = 0
    cost: float = 0.0
    prompt: str = ""
    """System prompt as sent."""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    """Messages of the conversation (``messages.message_to_dict`` form)."""
    tool_log: list[dict[str, Any]] = field(default_factory=list)
    """One entry per tool call: name, arguments, result (truncated), is_error, duration_s."""
    model: str | None = None
    provider: str | None = None


PASS_REPORT = "pass_report"
"""Attribute of an exception raised by an agent pass: what the pass had done (for the failed
task's artifact): ``system`` (instructions as sent), ``rejected`` (answers that failed the
output check, each with its errors), ``tool_log``, ``model_calls``, ``tool_calls``."""


def attach_report(exc: BaseException, **fields: Any) -> None:
    """Add ``fields`` to ``exc``'s pass report (kept when the exception is pickled)."""
    report = dict(getattr(exc, PASS_REPORT, None) or {})
    report.update({key: value for key, value in fields.items() if key not in report})
    try:
        setattr(exc, PASS_REPORT, report)
    except (AttributeError, TypeError):  # an exception type without a __dict__
        return


def report_of(exc: BaseException) -> dict[str, Any]:
    """What the failed pass had done (empty when it failed before talking to a model)."""
    report = getattr(exc, PASS_REPORT, None)
    return dict(report) if isinstance(report, dict) else {}
