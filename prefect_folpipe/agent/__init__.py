"""The agent runtime inside one task: conversation loop, structured output, ``run_task``."""

from __future__ import annotations

from .loop import CallLedger
from .result import TaskOutcome
from .task import run_task

__all__ = ["CallLedger", "TaskOutcome", "run_task"]
