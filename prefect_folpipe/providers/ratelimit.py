"""In-process model-call throttling: requests per minute and concurrent calls per model.

One ``RateLimiter`` per (provider, model) key is shared by every task of every run in the
process (``limiter_for``). It only ever wraps a model call, never a subflow, so nested
branches cannot deadlock on it. It works across event loops and threads, because Prefect may
run task runs in worker threads with loops of their own.

Requests are spaced evenly (a token bucket refilled at ``requests_per_minute / 60`` per second
that holds at most one second's worth of requests), which keeps a burst of parallel tasks from
tripping the provider's own per-minute limit. ``pause(seconds)`` holds every call of the key
that has not started yet, which is how a provider's ``Retry-After`` is honoured by the retry
and by every other task calling the same model.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class RateLimiter:
    """Limits the rate (requests per minute) and the concurrency of the calls it wraps."""

    def __init__(
        self, requests_per_minute: float | None = None, max_concurrent: int | None = None
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self.max_concurrent = max_concurrent
        self._lock = threading.Lock()
        rate = (requests_per_minute or 0) / 60.0
        self._rate = rate
        self._capacity = max(1.0, rate)
        self._tokens = self._capacity
        self._stamp = time.monotonic()
        self._paused_until = 0.0
        self._active = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def active(self) -> int:
        """Calls currently holding a slot."""
        return self._active

    def pause(self, seconds: float) -> None:
        """Hold every call that has not started yet for ``seconds`` (a ``Retry-After``)."""
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one concurrency slot and one request token for the duration of a call."""
        await self._wait_for_pause()
        await self._acquire()
        try:
            await self._wait_for_token()
            yield
        finally:
            self._release()

    # -- request rate ----------------------------------------------------------------------------

    async def _wait_for_pause(self) -> None:
        while (delay := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    async def _wait_for_token(self) -> None:
        if self._rate <= 0:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._capacity, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            self._tokens -= 1.0  # a negative balance is the queue of reserved requests
            delay = -self._tokens / self._rate if self._tokens < 0 else 0.0
        if delay > 0:
            await asyncio.sleep(delay)

    # -- concurrency -----------------------------------------------------------------------------

    async def _acquire(self) -> None:
        if self.max_concurrent is None:
            return
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._active < self.max_concurrent and not self._waiters:
                self._active += 1
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            self._abandon(loop, future)
            raise

    def _abandon(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
        """A waiter was cancelled: leave the queue, or pass on a slot it was already given."""
        with self._lock:
            if (loop, future) in self._waiters:
                self._waiters.remove((loop, future))
                return
        if future.done() and not future.cancelled():
            self._release()
        # otherwise the pending hand-over sees the cancelled future and passes the slot on

    def _release(self) -> None:
        if self.max_concurrent is None:
            return
        with self._lock:
            if not self._waiters:
                self._active -= 1
                return
            loop, future = self._waiters.popleft()
        # the slot goes straight to the next waiter (``_active`` stays the same)
        try:
            loop.call_soon_threadsafe(self._hand_over, future)
        except RuntimeError:  # that waiter's loop is closed: pass the slot on
            self._release()

    def _hand_over(self, future: asyncio.Future[None]) -> None:
        if future.done():  # cancelled meanwhile: give the slot to the next one
            self._release()
        else:
            future.set_result(None)


_LIMITERS: dict[Hashable, RateLimiter] = {}
_REGISTRY_LOCK = threading.Lock()


def limiter_for(
    key: Hashable, *, requests_per_minute: float | None = None, max_concurrent: int | None = None
) -> RateLimiter:
    """The process-wide limiter of ``key`` (e.g. ``("anthropic", "claude-sonnet-4-5")``).

    A key's limits are fixed when it is first used with them; asking again with other limits
    replaces the limiter (calls already inside the old one finish under the old limits).
    """
    with _REGISTRY_LOCK:
        limiter = _LIMITERS.get(key)
        wanted = (requests_per_minute, max_concurrent)
        if limiter is None or (limiter.requests_per_minute, limiter.max_concurrent) != wanted:
            limiter = RateLimiter(requests_per_minute, max_concurrent)
            _LIMITERS[key] = limiter
        return limiter
