"""The call guard: rate limits and Prefect global concurrency limits around each model call.

``settings.rate_limit`` (``requests_per_minute``, ``max_concurrent``, ``prefect_limit``) applies
per (provider, model): every task calling the same model shares one in-process limiter, with
the most restrictive values any of those tasks declares. ``prefect_limit`` names a Prefect
global concurrency limit held (``strict=True``) for the duration of each call, which limits
calls across processes and runs; create it first with ``prefect gcl create NAME --limit N``.

The guard wraps the model call only, never a subflow or a whole task, so nested branches
cannot deadlock on it. A ``rate_limit`` error with ``Retry-After`` pauses that model's calls
(the retry included) for the time the provider asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ..._process.wording import noun
from ...errors import ConfigError, ProviderError
from ...providers.ratelimit import RateLimiter, limiter_for
from ...workflow.tree import Task, Workflow

CallGuard = Callable[[Task], AbstractAsyncContextManager[None]]
ModelKey = tuple[str, str]
MAX_RETRY_AFTER = 300.0
"""Longest ``Retry-After`` honoured (seconds); Prefect's own retry delay applies as well."""


@dataclass
class ModelLimits:
    """The most restrictive limits declared for one (provider, model)."""

    requests_per_minute: float | None = None
    max_concurrent: int | None = None
    prefect_limits: set[str] = field(default_factory=set)

    def tighten(self, declared: Any) -> None:
        rpm = declared.get("requests_per_minute")
        if rpm is not None:
            self.requests_per_minute = min(rpm, self.requests_per_minute or rpm)
        concurrent = declared.get("max_concurrent")
        if concurrent is not None:
            self.max_concurrent = min(concurrent, self.max_concurrent or concurrent)
        if declared.get("prefect_limit"):
            self.prefect_limits.add(str(declared["prefect_limit"]))


def model_key(task: Task) -> ModelKey | None:
    provider = task.provider
    if provider is None:
        return None
    return (provider.type, provider.model or "")


def collect_limits(workflow: Workflow) -> dict[ModelKey, ModelLimits]:
    """Per (provider, model), the limits declared by any task that calls it."""
    limits: dict[ModelKey, ModelLimits] = {}
    for task in workflow.tasks():
        key = model_key(task)
        declared = _as_mapping(task.settings.rate_limit)
        if key is None or not declared:
            continue
        limits.setdefault(key, ModelLimits()).tighten(declared)
    return limits


def _as_mapping(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if hasattr(value, "model_dump"):
        return dict(value.model_dump())
    return dict(value)


def make_call_guard(workflow: Workflow) -> CallGuard:
    """``guard(task)`` -> async context manager around one model call.

    Every task with a provider gets its model's limiter, even without ``rate_limit``: a
    ``rate_limit`` error carrying ``retry_after`` pauses the model's calls for that long
    (at most ``MAX_RETRY_AFTER`` seconds), so the retry honours the provider's ``Retry-After``.
    """
    limits = collect_limits(workflow)
    limiters: dict[ModelKey, RateLimiter] = {}
    for task in workflow.tasks():
        key = model_key(task)
        if key is None or key in limiters:
            continue
        declared = limits.get(key, ModelLimits())
        limiters[key] = limiter_for(
            key,
            requests_per_minute=declared.requests_per_minute,
            max_concurrent=declared.max_concurrent,
        )

    def guard(task: Task) -> AbstractAsyncContextManager[None]:
        key = model_key(task)
        if key is None or key not in limiters:
            return _unguarded()
        declared = limits.get(key)
        names = sorted(declared.prefect_limits) if declared else []
        return _guarded(limiters[key], names)

    return guard


@asynccontextmanager
async def _unguarded() -> AsyncIterator[None]:
    yield


@asynccontextmanager
async def _guarded(limiter: RateLimiter, prefect_limits: list[str]) -> AsyncIterator[None]:
    async with limiter.slot(), AsyncExitStack() as stack:
        if prefect_limits:
            await _hold_prefect_limits(stack, prefect_limits)
        try:
            yield
        except ProviderError as exc:
            if exc.kind == "rate_limit" and exc.retry_after:
                limiter.pause(min(exc.retry_after, MAX_RETRY_AFTER))
            raise


async def _hold_prefect_limits(stack: AsyncExitStack, names: list[str]) -> None:
    from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError, concurrency

    try:
        await stack.enter_async_context(concurrency(names, occupy=1, strict=True))
    except ConcurrencySlotAcquisitionError as exc:
        raise ConfigError(
            f"Prefect global concurrency {noun(len(names), 'limit')} {', '.join(map(repr, names))} "
            "could not be "
            f"acquired: {exc}",
            code="FP340",
            hint=f"create it: prefect gcl create {names[0]} --limit N",
        ) from None
