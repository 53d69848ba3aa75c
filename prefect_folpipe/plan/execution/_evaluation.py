"""Conditions evaluated inside the timeout that bounds them (Prefect-free).

``skip_if`` and ``until`` are the author's expressions. Evaluated in the event loop's thread,
a slow one blocked the loop, so no timeout could fire: a loop with ``iteration_timeout: 5``
ran 62 s on one ``until`` and reported ``completed``. :func:`evaluate_condition` evaluates in
a daemon thread and awaits the answer, so the enclosing ``asyncio.timeout`` (the iteration's,
the task's) ends the wait; an abandoned evaluation finishes (or hits the evaluator's own
bounds) in the background and its answer is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from ...expressions import Condition


async def evaluate_condition(condition: Condition, context: Mapping[str, Any]) -> bool:
    """``condition.evaluate(context)`` in a worker thread; cancellable while it runs."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[bool] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if answer.done():  # the wait was cancelled (a timeout): drop the late answer
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(bool(value))

    def work() -> None:
        try:
            value = condition.evaluate(context)
        except BaseException as exc:  # handed to the awaiting task, raised there
            _deliver(loop, settle, None, exc)
        else:
            _deliver(loop, settle, value, None)

    threading.Thread(target=work, name="folpipe-condition", daemon=True).start()
    return await answer


def _deliver(loop: asyncio.AbstractEventLoop, settle: Any, value: Any, error: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
        loop.call_soon_threadsafe(settle, value, error)
