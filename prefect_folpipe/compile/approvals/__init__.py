"""Approval gates at run time: who answers, what is asked, and suspending a deployment's run."""

from __future__ import annotations

from ._gate import ApprovalGates

__all__ = [
    "ApprovalGates",
]
