"""Rate limits around model calls: the in-process limiter and the compile-side call guard."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.infra._callguard import collect_limits, make_call_guard
from prefect_folpipe.errors import ConfigError, ProviderError
from prefect_folpipe.providers.ratelimit import RateLimiter, limiter_for
from prefect_folpipe.workflow.config import ProviderConfig, TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, ResolvedProvider, Task, Workflow


class Meter:
    """Counts how many calls are inside at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.peak = 0
        self.starts: list[float] = []
        self._lock = threading.Lock()

    async def call(self, limiter: Any, seconds: float = 0.05) -> None:
        async with limiter:
            with self._lock:
                self.inside += 1
                self.peak = max(self.peak, self.inside)
                self.starts.append(time.monotonic())
            await asyncio.sleep(seconds)
            with self._lock:
                self.inside -= 1


async def test_max_concurrent() -> None:
    limiter = RateLimiter(max_concurrent=2)
    meter = Meter()
    await asyncio.gather(*(meter.call(limiter.slot()) for _ in range(7)))
    assert meter.peak == 2
    assert limiter.active == 0


async def test_requests_per_minute_spaces_calls() -> None:
    limiter = RateLimiter(requests_per_minute=600)  # 10/s, bursts of at most 10
    meter = Meter()
    started = time.monotonic()
    await asyncio.gather(*(meter.call(limiter.slot(), 0) for _ in range(13)))
    elapsed = time.monotonic() - started
    assert elapsed >= 0.28, "calls 11-13 wait 0.1 s each for a token"
    late = sorted(meter.starts)[10:]
    assert late[-1] - late[0] >= 0.18


async def test_cancelled_waiter_does_not_leak_a_slot() -> None:
    limiter = RateLimiter(max_concurrent=1)
    meter = Meter()
    holder = asyncio.create_task(meter.call(limiter.slot(), 0.1))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(meter.call(limiter.slot(), 0))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await holder
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.wait_for(meter.call(limiter.slot(), 0), 1.0)
    assert limiter.active == 0


def test_limit_holds_across_threads_and_event_loops() -> None:
    limiter = RateLimiter(max_concurrent=1)
    meter = Meter()

    def worker() -> None:
        asyncio.run(_calls(meter, limiter))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert meter.peak == 1
    assert len(meter.starts) == 9


async def _calls(meter: Meter, limiter: RateLimiter) -> None:
    await asyncio.gather(*(meter.call(limiter.slot(), 0.01) for _ in range(3)))


def test_limiter_is_shared_per_key() -> None:
    key = ("anthropic", f"m-{uuid.uuid4()}")
    first = limiter_for(key, max_concurrent=2)
    assert limiter_for(key, max_concurrent=2) is first
    assert limiter_for(key, max_concurrent=3) is not first


def _task(path: str, model: str, rate_limit: dict[str, Any] | None) -> Task:
    provider = ResolvedProvider("p", "openai", ProviderConfig(type="openai", model=model))
    return Task(
        name=path or "root",
        path=path,
        folder=Path("."),
        config=TaskConfig(),
        settings=EffectiveSettings(rate_limit=rate_limit),
        instructions="x",
        provider=provider,
    )


def _workflow(*children: Task) -> Workflow:
    root = Task(
        name="root",
        path="",
        folder=Path("."),
        config=TaskConfig(),
        settings=EffectiveSettings(),
        children=children,
    )
    return Workflow(root=root, root_dir=Path("."), name="wf")


async def test_without_limits_calls_run_freely() -> None:
    task = _task("a", f"m-{uuid.uuid4()}", None)
    guard = make_call_guard(_workflow(task))
    meter = Meter()
    await asyncio.gather(*(meter.call(guard(task)) for _ in range(4)))
    assert meter.peak == 4


async def test_retry_after_pauses_the_models_next_calls() -> None:
    task = _task("a", f"m-{uuid.uuid4()}", None)
    other = _task("b", f"m-{uuid.uuid4()}", None)
    guard = make_call_guard(_workflow(task, other))
    with pytest.raises(ProviderError):
        async with guard(task):
            raise ProviderError("429", kind="rate_limit", retry_after=0.4)
    started = time.monotonic()
    async with guard(other):
        pass
    assert time.monotonic() - started < 0.2, "another model is not paused"
    async with guard(task):
        pass
    assert time.monotonic() - started >= 0.35
    with pytest.raises(ProviderError):
        async with guard(task):
            raise ProviderError("500", kind="server_error", retry_after=5)
    started = time.monotonic()
    async with guard(task):
        pass
    assert time.monotonic() - started < 0.2, "only rate limits pause"


def test_most_restrictive_limits_per_model() -> None:
    model = f"m-{uuid.uuid4()}"
    wf = _workflow(
        _task("a", model, {"requests_per_minute": 100, "max_concurrent": 4}),
        _task("b", model, {"max_concurrent": 2, "prefect_limit": "llm"}),
        _task("c", "other", None),
    )
    limits = collect_limits(wf)
    assert set(limits) == {("openai", model)}
    mine = limits[("openai", model)]
    assert (mine.requests_per_minute, mine.max_concurrent, mine.prefect_limits) == (
        100,
        2,
        {"llm"},
    )


async def test_guard_limits_every_task_of_the_model() -> None:
    model = f"m-{uuid.uuid4()}"
    a, b = _task("a", model, {"max_concurrent": 1}), _task("b", model, None)
    other = _task("c", "other", None)
    guard = make_call_guard(_workflow(a, b, other))
    assert guard is not None
    meter = Meter()
    await asyncio.gather(meter.call(guard(a)), meter.call(guard(b)), meter.call(guard(a)))
    assert meter.peak == 1
    free = Meter()
    await asyncio.gather(*(free.call(guard(other)) for _ in range(3)))
    assert free.peak == 3


@pytest.mark.prefect
async def test_prefect_global_concurrency_limit(prefect_harness: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    name = f"llm-{uuid.uuid4().hex[:8]}"
    async with get_client() as client:
        await client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name=name, limit=1)
        )
    model = f"m-{uuid.uuid4()}"
    task = _task("a", model, {"prefect_limit": name})
    guard = make_call_guard(_workflow(task))
    assert guard is not None
    meter = Meter()
    await asyncio.gather(*(meter.call(guard(task), 0.2) for _ in range(2)))
    assert meter.peak == 1


@pytest.mark.prefect
async def test_missing_prefect_limit_is_a_config_error(prefect_harness: str) -> None:
    task = _task("a", f"m-{uuid.uuid4()}", {"prefect_limit": f"absent-{uuid.uuid4().hex[:6]}"})
    guard = make_call_guard(_workflow(task))
    assert guard is not None
    with pytest.raises(ConfigError) as caught:
        async with guard(task):
            pass
    assert caught.value.code == "FP340"
    assert "prefect gcl create" in (caught.value.hint or "")
