"""``parallel`` (the default): every child at once, bounded by ``parallel_workers``."""

from __future__ import annotations

from ._kind import ExecutionType


class Parallel(ExecutionType):
    name = "parallel"
