"""Which failures are worth another attempt (Prefect-free)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import is_retryable
from ..workflow.tree import EffectiveSettings, Task


def retry_on_of(task: Task) -> tuple[str, ...] | None:
    """``conditions.retry_on`` (task) or the cascaded ``settings.retry_on``; ``None`` = any."""
    own = task.config.conditions.retry_on
    if own is not None:
        return tuple(own)
    return task.settings.retry_on


def should_retry(exc: BaseException | None, retry_on: Sequence[str] | None) -> bool:
    """Author errors and non-retryable provider errors never; otherwise per ``retry_on``.

    ``retry_on`` entries match an exception class name anywhere in its MRO
    (``TimeoutError`` matches a task timeout) or a provider error kind (``rate_limit``).
    """
    if exc is None:
        return retry_on is None
    if not is_retryable(exc):
        return False
    if retry_on is None:
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str):
        names.add(kind)
    return bool(names.intersection(retry_on))


def retry_delays(settings: EffectiveSettings) -> list[float]:
    """Delay before each retry: a number grows exponentially (x2), a list is used as is."""
    retries = settings.max_retries
    delay = settings.retry_delay_seconds
    if retries <= 0:
        return []
    if isinstance(delay, int | float):
        return [float(delay) * (2**i) for i in range(retries)]
    values = [float(v) for v in delay] or [0.0]
    return [values[min(i, len(values) - 1)] for i in range(retries)]


def prefect_retry_delay(settings: EffectiveSettings) -> float | list[float]:
    """``retry_delay_seconds`` for Prefect: one number when every retry waits the same (the
    Prefect UI's task-run page can only show a number: a list reads "NaNs"), else the list."""
    delays = retry_delays(settings)
    if len(set(delays)) <= 1:
        return delays[0] if delays else 0
    return delays
