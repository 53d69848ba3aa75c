"""Approval gates at run time: who answers, what is asked, and suspending a deployment's run."""

from __future__ import annotations

from ._events import (
    DEADLINE_PREFIX,
    LEFT_GATE,
    NOTIFY_PREFIX,
    NOTIFY_ROLE,
    WAITING,
    deadline_event,
    deadline_window,
)
from ._gate import ApprovalGates

__all__ = [
    "DEADLINE_PREFIX",
    "LEFT_GATE",
    "NOTIFY_PREFIX",
    "NOTIFY_ROLE",
    "WAITING",
    "ApprovalGates",
    "deadline_event",
    "deadline_window",
]
