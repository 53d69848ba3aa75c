"""What the spans of one process share, without OpenTelemetry: the run and pass in progress.

The two context variables are set by the run and pass spans while they are open; the spans
below them (model calls, tool calls, hooks, gates) are no-ops when they are unset, so a run
without tracing pays one context-variable read per call.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PassInfo:
    """The agent pass a span belongs to."""

    path: str
    phase: str
    attempt: int
    span: Any
    """The open OpenTelemetry span of the pass."""


RUN: ContextVar[Any] = ContextVar("folpipe_otel_run", default=None)
"""The open run span (``telemetry.spans.RunTrace``) of this context, or ``None``."""
PASS: ContextVar[PassInfo | None] = ContextVar("folpipe_otel_pass", default=None)
"""The open agent-pass span of this context, or ``None``."""
