"""Quick retries of a local Prefect server's "database is locked".

A ``prefect server`` on SQLite (Prefect's default, and folpipe's temporary server) answers
HTTP 503 when another of its connections wrote between a request's read and its write: after
a run, the server goes on recording that run's task runs, and the next run's flow run is
often refused until the recording is done (each refusal takes milliseconds). Prefect's
client waits 2, 4, 8 s between its tries, so a run waits until well after that (a re-run of
a 500-task group took 13.9 s, 13.5 s of it those waits). For a server on this machine the
run's client asks again after 50 ms, doubling up to 0.5 s, for at most 30 s, and only then
hands the 503 to Prefect's own retries: a run waits about as long as the server is busy. A
remote server's 503 (overload, maintenance) keeps Prefect's backoff unchanged.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from types import TracebackType
from typing import Any

import httpx

LOG = logging.getLogger("prefect_folpipe.compile")
FIRST_WAIT_S = 0.05
LONGEST_WAIT_S = 0.5
BUDGET_S = 30.0
"""How long a request is retried here before Prefect's client retries it its own way."""


class QuickRetryTransport(httpx.AsyncBaseTransport):
    """``inner``, with an HTTP 503 asked again after short waits (up to ``BUDGET_S``); a
    request whose body is streamed goes once, as it came."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.retried = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        replayable = isinstance(request.stream, httpx.ByteStream)  # a stream goes once
        response = await self.inner.handle_async_request(request)
        if not replayable:
            return response
        wait, waited = FIRST_WAIT_S, 0.0
        while response.status_code == 503 and waited + wait <= BUDGET_S:
            await response.aclose()
            await asyncio.sleep(wait)
            waited += wait
            wait = min(wait * 2, LONGEST_WAIT_S)
            self.retried += 1
            response = await self.inner.handle_async_request(request)
        if waited:
            LOG.debug("%s %s: 503 retried for %.2f s", request.method, request.url.path, waited)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> QuickRetryTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.inner.__aexit__(exc_type, exc_value, traceback)


def is_local(url: httpx.URL) -> bool:
    """Whether ``url`` names a server on this machine (a loopback address, ``localhost``)."""
    host = url.host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def wrap_local_transport(http: Any) -> QuickRetryTransport | None:
    """Give ``http`` (Prefect's httpx client) quick retries when its API is on this machine
    and reached without a proxy; the wrapper, or ``None`` when left as it was."""
    url = http.base_url
    current = getattr(http, "_transport", None)
    if not is_local(url) or current is None or http._transport_for_url(url) is not current:
        return None
    wrapper = QuickRetryTransport(current)
    http._transport = wrapper
    return wrapper
