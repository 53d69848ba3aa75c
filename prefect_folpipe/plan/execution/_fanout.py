"""Running a group's members concurrently: the first failure stops the rest (fail-fast), and
a control signal of one member (an approval's pause) lets its siblings finish first."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


class FailFast(Exception):
    """Raised by a member that failed a fail-fast group: ``index`` is its position."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def is_signal(exc: BaseException) -> bool:
    """A control signal passing up the tree (a ``prefect.exceptions.PrefectSignal`` such as
    ``Pause``: the run was suspended for an approval), as opposed to an error, a cancellation
    or an outside signal (Prefect's ``TerminationSignal`` is an interruption). Told by class
    name, so this module stays Prefect-free."""
    return any(
        cls.__name__ == "PrefectSignal" and cls.__module__ == "prefect.exceptions"
        for cls in type(exc).__mro__
    )


async def _caught(coro: Any, signals: list[BaseException]) -> None:
    try:
        await coro
    except BaseException as exc:
        if not is_signal(exc):
            raise
        signals.append(exc)  # the siblings in flight finish first


def _start(tasks: asyncio.TaskGroup, coro: Any, signals: list[BaseException]) -> None:
    wrapped = _caught(coro, signals)
    try:
        tasks.create_task(wrapped)
    except BaseException:
        wrapped.close()
        raise


async def gather_fail_fast(coros: Sequence[Any]) -> int | None:
    """Run coroutines in a TaskGroup; the index of the first ``FailFast`` (siblings cancelled).

    A control signal (``is_signal``) of one coroutine lets the others finish, then goes on up
    as itself (a task group would wrap it)."""
    failed: list[int] = []
    signals: list[BaseException] = []
    try:
        async with asyncio.TaskGroup() as tasks:
            for coro in coros:
                _start(tasks, coro, signals)
    except* FailFast as group_error:
        failed = [exc.index for exc in group_error.exceptions if isinstance(exc, FailFast)]
    finally:
        for coro in coros:  # those never started (refused, cancelled first) end unawaited
            coro.close()
    if signals:
        raise signals[0]
    return min(failed) if failed else None
