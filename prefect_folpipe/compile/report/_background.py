"""API writes that a run's result does not wait for: task artifacts and the run summary.

Prefect ships its own run records (events) and run logs this way: queued in the process,
written by a background worker, flushed when the process exits. ``BackgroundWriter`` does the
same for folpipe's reports: a daemon thread with its own event loop and a few concurrent
workers creates them, and a run returns without waiting for the tail. ``flush()`` waits for
every queued write; it runs by itself at process exit, before Prefect stops a temporary server.

Reports yield to the work: while a run is busy (a run or task started or finished in the last
``QUIET_S``, or its body ended in the last ``END_HOLD_S``) the writer holds back, so its
requests fill the run's idle time (model calls in flight) and the time after it instead of
competing with task runs for the CPU and the API's database. A report never waits more than
``MAX_HOLD_S``; ``flush()`` and process exit write at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from ..._process.wording import plural
from ..plainhttp import api_client

LOG = logging.getLogger("prefect_folpipe.compile")
WORKERS = 4
"""Concurrent writes: enough to keep up with wide fan-out, few enough that the API's SQLite
writes do not starve the run's own task-run records."""
QUIET_S = 0.25
"""A run counts as busy this long after a task started or finished."""
END_HOLD_S = 1.0
"""After a run's body: the flow run's own end (its final state, the server recording the
run's task-run events) goes first."""
MAX_HOLD_S = 10.0
"""Longest a report is held back for a busy run."""
EXIT_FLUSH_S = 30.0
"""How long process exit waits for queued writes (e.g. when the API has gone away)."""

Write = Callable[[Any], Awaitable[Any]]
"""A coroutine function taking a Prefect client."""


class BackgroundWriter:
    """A queue of API writes drained by a daemon thread; ``flush()`` waits for it."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._workers = workers
        self._reset()
        if hasattr(os, "register_at_fork"):  # a forked child starts with no writer thread
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._idle = threading.Condition()
        self._pending = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._items: deque[tuple[Write, contextvars.Context, str, float]] = deque()
        self._wake = asyncio.Event()
        self._hurry = asyncio.Event()
        self._clients: dict[Any, Any] = {}
        self._busy_until = 0.0
        self._flushing = 0
        self._tasks: list[asyncio.Task[None]] = []

    def submit(self, write: Write, what: str) -> None:
        """Queue ``write(client)``; it runs with the Prefect settings of the caller's context."""
        item = (write, contextvars.copy_context(), what, time.monotonic())
        loop = self._started()
        with self._idle:
            self._pending += 1
            self._items.append(item)
            wake = len(self._items) == 1  # a burst wakes the writer thread once
        if wake:
            loop.call_soon_threadsafe(self._wake.set)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued write is done (or ``timeout``); True when nothing is left.
        Nothing is held back for busy runs meanwhile."""
        with self._idle:
            self._flushing += 1
            try:
                if self._loop is not None and self._pending:  # held-back writes go now
                    self._loop.call_soon_threadsafe(self._hurry.set)
                return self._idle.wait_for(lambda: self._pending == 0, timeout)
            finally:
                self._flushing -= 1

    def touch(self, hold: float | None = None) -> None:
        """A run or task started or finished: hold reports back for the next ``hold`` seconds
        (``QUIET_S`` by default; a run's end holds them ``END_HOLD_S`` while Prefect finishes
        the flow run)."""
        until = time.monotonic() + (QUIET_S if hold is None else hold)
        self._busy_until = max(self._busy_until, until)

    def _busy(self) -> bool:
        return not self._flushing and time.monotonic() < self._busy_until

    # -- the thread ------------------------------------------------------------------------

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._idle:
            if self._loop is None:
                ready = threading.Event()
                thread = threading.Thread(
                    target=self._serve, args=(ready,), name="folpipe-writer", daemon=True
                )
                thread.start()
                ready.wait()
                _at_exit(self._close)
            assert self._loop is not None
            return self._loop

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._tasks = [loop.create_task(self._work()) for _ in range(self._workers)]
        ready.set()
        loop.run_forever()

    async def _work(self) -> None:
        while True:
            with self._idle:
                item = self._items.popleft() if self._items else None
            if item is None:
                self._wake.clear()
                if not self._items:
                    await self._wake.wait()
                continue
            write, context, what, submitted = item
            try:
                client = await self._client(context)  # opened now, while the run works
                await self._hold(submitted)
                # in the caller's context: the events Prefect's client emits with a write
                # (an artifact's) go to the caller's API too, not to the one of this thread's
                # settings (none: Prefect then started a temporary server for them)
                await asyncio.create_task(write(client), context=context)
            except Exception as exc:  # reports never fail a run
                LOG.debug("%s not written: %s", what, exc)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    async def _hold(self, submitted: float) -> None:
        """Wait while the run is busy (at most ``MAX_HOLD_S`` after ``submitted``); a
        ``flush()`` ends the wait at once."""
        while self._busy() and time.monotonic() < submitted + MAX_HOLD_S:
            self._hurry.clear()
            if not self._busy():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), QUIET_S / 5)

    async def _client(self, context: contextvars.Context) -> Any:
        """One open client per API (the caller's settings pick it: server, Cloud, ephemeral)."""
        from prefect.settings import PREFECT_API_URL

        api = context.run(PREFECT_API_URL.value)
        client = self._clients.get(api)
        if client is None:
            client = context.run(api_client)
            self._clients[api] = await client.__aenter__()
        return client

    def _close(self) -> None:
        if not self.flush(EXIT_FLUSH_S):
            LOG.warning("%s abandoned at exit", plural(self._pending, "folpipe artifact write"))
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        closing = asyncio.run_coroutine_threadsafe(self._close_clients(), loop)
        with contextlib.suppress(Exception):
            closing.result(5)
        loop.call_soon_threadsafe(loop.stop)

    async def _close_clients(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)


def _at_exit(callback: Callable[[], None]) -> None:
    """Run ``callback`` when the interpreter exits, before ``atexit`` handlers (Prefect stops
    its temporary server in one) — the hook ``concurrent.futures`` and Prefect's own workers
    use; plain ``atexit`` where it is missing."""
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(callback)
            return
    except RuntimeError:  # already shutting down
        return
    import atexit

    atexit.register(callback)


WRITER = BackgroundWriter()


def flush_artifacts(timeout: float | None = None) -> bool:
    """Wait until every artifact of the runs so far is written to the Prefect API.

    Runs return without waiting for their artifacts (they are written in the background and
    flushed at process exit); call this before reading them back through Prefect's client.
    Returns False if ``timeout`` expired first.
    """
    return WRITER.flush(timeout)
