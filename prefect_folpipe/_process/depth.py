"""Room on the interpreter's stack for a walk as deep as a workflow's tree."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

FRAMES_PER_LEVEL = 4
"""Python frames a recursive walk of a task tree spends per level, with some to spare."""


@contextlib.contextmanager
def room_for_levels(levels: int) -> Iterator[None]:
    """At least ``FRAMES_PER_LEVEL * levels`` (plus a margin) frames more than the stack holds
    now, restored after. A tree's depth is bounded by the file system's longest path (about
    370 levels of ``subtasks/a``), so this never raises the limit without bound."""
    here, frame = 0, sys._getframe()
    while frame is not None:
        here, frame = here + 1, frame.f_back
    before = sys.getrecursionlimit()
    needed = here + FRAMES_PER_LEVEL * levels + 200
    if needed > before:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if needed > before:
            sys.setrecursionlimit(before)
