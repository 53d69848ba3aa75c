"""Failures outside the workflow, as coded errors: the Prefect API and signals (Prefect-aware).

``infrastructure_error(exc)`` reads an exception raised while talking to Prefect and returns the
``InfrastructureError`` that says what happened (FP520 API unreachable, FP521 the API kept
answering with an error after Prefect's own bounded retries, FP523 the temporary server did not
start in time), or ``None`` for anything else. ``interruption(exc)`` does the same for a run
stopped by a signal (FP522).
"""

from __future__ import annotations

import asyncio
import signal

import httpx
from prefect.exceptions import TerminationSignal
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_CLIENT_MAX_RETRIES,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
)

from ...errors import InfrastructureError, RunInterrupted

RESUME_HINT = "finished tasks are checkpointed: `folpipe resume PATH` continues from them"
SERVER_HINT = (
    "check PREFECT_API_URL and that the server runs (`prefect server start`); without "
    "PREFECT_API_URL folpipe starts a temporary local server"
)


def _api() -> str:
    return str(PREFECT_API_URL.value() or "Prefect's temporary server")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 20:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def infrastructure_error(exc: BaseException) -> InfrastructureError | None:
    """The coded error for a failure of the Prefect API, or None when ``exc`` is not one."""
    chain = _chain(exc)
    for error in chain:
        if isinstance(error, InfrastructureError):
            return error
    for error in chain:  # an HTTP answer says more than the connection failure wrapping it
        if isinstance(error, httpx.HTTPStatusError):
            return _status_error(error)
    for error in chain:
        if isinstance(error, httpx.TransportError | ConnectionError) or (
            isinstance(error, RuntimeError) and str(error).startswith("Failed to reach API")
        ):
            return InfrastructureError(
                f"the Prefect API at {_api()} is unreachable", code="FP520", hint=SERVER_HINT
            )
        if isinstance(error, RuntimeError) and "ephemeral Prefect API server" in str(error):
            timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
            return InfrastructureError(
                f"Prefect's temporary server did not start within {timeout}s",
                code="FP523",
                hint="a first start prepares its database and can take a minute on a busy "
                "machine: raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, or start "
                "`prefect server start` once and set PREFECT_API_URL",
            )
    return None


def _status_error(error: httpx.HTTPStatusError) -> InfrastructureError:
    status = error.response.status_code
    where = error.request.url.path if error.request is not None else "the API"
    tries = PREFECT_CLIENT_MAX_RETRIES.value() + 1
    busy = status in (429, 502, 503, 504)
    detail = f"tried {tries} times" if busy else "not retried"
    return InfrastructureError(
        f"the Prefect API at {_api()} answered HTTP {status} to {where} ({detail})",
        code="FP521",
        hint="the server is overloaded or failing: run again later (`folpipe resume PATH` "
        "reuses finished tasks); PREFECT_CLIENT_MAX_RETRIES sets how often a request is "
        "retried"
        if busy
        else "check the server's logs",
    )


def signal_name(number: int | None) -> str:
    try:
        return signal.Signals(number).name if number is not None else "a signal"
    except ValueError:
        return f"signal {number}"


def interruption(exc: BaseException, received: int | None = None) -> RunInterrupted | None:
    """The coded error for a run stopped by a signal (``received``: the one the caller saw)."""
    for error in _chain(exc):
        if isinstance(error, RunInterrupted):
            return error
        if isinstance(error, TerminationSignal | KeyboardInterrupt):
            # a KeyboardInterrupt raised for another signal carries it in ``.signal``
            received = received or getattr(error, "signal", None) or signal.SIGINT
        elif not isinstance(error, asyncio.CancelledError):
            continue
        by = f" by {signal_name(received)}" if received else ""
        return RunInterrupted(f"the run was interrupted{by}", hint=RESUME_HINT)
    return None
