"""Writes a pass leaves for later runs, made beside the run instead of on its path.

A pass's own checkpoint is written before its task run reports success (Prefect's
transaction), so whatever depends on it finds it. Two more writes serve only later runs and
``folpipe plan``: the shared checkpoint a ``--fresh`` run (or a pass ``--from`` asks again)
refreshes, and the pass's manifest. Nothing in the run reads them, so :data:`SIDE_WRITES`
makes them on a thread of its own, in order, while the run goes on; the run waits for them
before it reports (``drain``), so a failed write still reaches its run document (FP541) and
the next run finds them. Process exit waits for any left (a pass on a Dask worker).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any


class SideWrites:
    """One thread making writes nothing in the run reads, in the order they were asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[Any]] = []

    def submit(self, write: Callable[[], Any]) -> None:
        """Make ``write()`` on the thread, in the caller's context (its run's store events)."""
        context = contextvars.copy_context()
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="folpipe-side-writes")
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._pool.submit(context.run, write))

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every write asked so far is made; False when ``timeout`` passed first."""
        with self._lock:
            pending, self._pending = self._pending, []
        _, left = wait(pending, timeout)
        with self._lock:
            self._pending.extend(left)
        return not left


SIDE_WRITES = SideWrites()
