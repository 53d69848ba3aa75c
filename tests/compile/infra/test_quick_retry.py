"""A local server's "database is locked" (HTTP 503) is asked again within milliseconds, not
after Prefect's 2 s backoff; a remote server's 503 keeps Prefect's backoff.

* the transport alone (httpx's ``MockTransport``): the same request sent again, the budget
  bounded, the answer after it handed on as it came;
* which clients get it: loopback and ``localhost`` without a proxy, never a remote host;
* Prefect's own client, in the context a top-level run enters, against a local HTTP server
  that refuses three times: answered without a single retry of Prefect's;
* a run on the session's ``prefect server start`` whose flow run is refused three times, as
  a busy SQLite server refuses it: asked again, and Prefect's client never backs off (with
  the quick retries taken away, it does).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from drain import drain_prefect_workers

from prefect_folpipe.compile.infra import _quick_retry, run_clients
from prefect_folpipe.compile.infra._quick_retry import (
    QuickRetryTransport,
    is_local,
    wrap_local_transport,
)

PREFECT_BACKOFF = "retryable status code"
"""What Prefect's client logs (DEBUG, ``prefect.client``) before it waits to try again."""


def _refusing(times: int, seen: list[bytes]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.read())
        if len(seen) <= times:
            return httpx.Response(503, json={"exception_message": "Service Unavailable"})
        return httpx.Response(201, json={"id": "created"})

    return httpx.MockTransport(answer)


async def test_a_503_is_sent_again_with_the_same_body_until_it_is_answered() -> None:
    seen: list[bytes] = []
    transport = QuickRetryTransport(_refusing(3, seen))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as http:
        response = await http.post("/api/flow_runs/", json={"name": "run"})
    assert response.status_code == 201 and response.json() == {"id": "created"}
    assert transport.retried == 3
    assert seen == [b'{"name":"run"}'] * 4


async def test_past_its_budget_the_503_goes_to_prefects_own_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_quick_retry, "FIRST_WAIT_S", 0.01)
    monkeypatch.setattr(_quick_retry, "BUDGET_S", 0.05)
    seen: list[bytes] = []
    transport = QuickRetryTransport(_refusing(100, seen))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as http:
        response = await http.get("/api/health")
    assert response.status_code == 503
    assert 2 <= len(seen) <= 5  # 0.01 + 0.02 (+ 0.04 > budget): bounded


async def test_a_streamed_body_is_sent_once() -> None:
    seen: list[bytes] = []
    transport = QuickRetryTransport(_refusing(3, seen))

    async def body() -> Any:
        yield b"part"

    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as http:
        response = await http.post("/api/upload", content=body())
    assert response.status_code == 503 and transport.retried == 0 and seen == [b"part"]


async def test_other_answers_pass_through_untouched() -> None:
    seen: list[bytes] = []
    transport = QuickRetryTransport(_refusing(0, seen))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as http:
        assert (await http.get("/api/health")).status_code == 201
    assert transport.retried == 0 and len(seen) == 1


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:4200/api", True),
        ("http://localhost:4200/api", True),
        ("http://[::1]:4200/api", True),
        ("https://api.prefect.cloud/api/accounts/a/workspaces/w", False),
        ("http://10.0.0.5:4200/api", False),
        ("http://prefect.internal:4200/api", False),
    ],
)
def test_only_a_server_on_this_machine_gets_quick_retries(url: str, local: bool) -> None:
    assert is_local(httpx.URL(url)) is local
    http = httpx.AsyncClient(base_url=url)
    wrapper = wrap_local_transport(http)
    assert (wrapper is not None) is local
    assert isinstance(http._transport, QuickRetryTransport) is local


def test_a_proxied_local_api_keeps_its_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:3128")
    http = httpx.AsyncClient(base_url="http://127.0.0.1:4200/api")
    assert wrap_local_transport(http) is None


class _LockedApi(BaseHTTPRequestHandler):
    """A Prefect API that answers its version, and "database is locked" three times."""

    refusals = 0

    def do_GET(self) -> None:
        if self.path.endswith("/admin/version"):
            import prefect

            return self._send(200, prefect.__version__)
        if type(self).refusals < 3:
            type(self).refusals += 1
            return self._send(503, {"exception_message": "Service Unavailable"})
        return self._send(200, True)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def locked_api() -> Iterator[str]:
    _LockedApi.refusals = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LockedApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api"
    finally:
        server.shutdown()


async def test_prefects_client_in_a_runs_context_does_not_back_off(
    locked_api: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect.context import AsyncClientContext
    from prefect.settings import PREFECT_API_URL, temporary_settings

    caplog.set_level(logging.DEBUG, logger="prefect.client")
    with temporary_settings(updates={PREFECT_API_URL: locked_api}):
        async with run_clients():
            client = AsyncClientContext.get().client  # type: ignore[union-attr]
            assert await client.api_healthcheck() is None
    assert _LockedApi.refusals == 3
    assert not [r for r in caplog.records if PREFECT_BACKOFF in r.getMessage()]


async def test_inside_someone_elses_client_context_nothing_changes(locked_api: str) -> None:
    from prefect.context import AsyncClientContext
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: locked_api}):
        async with AsyncClientContext() as theirs:
            async with run_clients():
                assert AsyncClientContext.get() is theirs
            assert not isinstance(theirs.client._client._transport, QuickRetryTransport)


class _LockedOnce(httpx.AsyncBaseTransport):
    """In front of the real server: the first ``times`` flow-run creations answered as a busy
    SQLite server answers them (503), everything else passed through."""

    def __init__(self, inner: httpx.AsyncBaseTransport, times: int) -> None:
        self.inner, self.left = inner, times

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/flow_runs/") and self.left:
            self.left -= 1
            return httpx.Response(503, json={"exception_message": "Service Unavailable"})
        return await self.inner.handle_async_request(request)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entry", "quick"),
    [("run_workflow", True), ("folder_to_flow", True), ("run_workflow", False)],
    ids=["quick-retries", "folder-to-flow", "prefect-alone"],
)
def test_a_run_on_a_busy_server_does_not_wait_on_prefects_backoff(
    prefect_harness: str,
    make_workflow: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    entry: str,
    quick: bool,
) -> None:
    """A run whose flow run the server refuses three times ("database is locked", as a
    SQLite server answers while it records the last run): asked again within milliseconds,
    and Prefect's client never backs off, whether the run is ``run_workflow``'s or the flow
    of ``folder_to_flow`` called; with the quick retries taken away, one refusal makes it
    back off (what this guards against). The run completes either way."""
    from prefect_folpipe.compile import flush_artifacts, folder_to_flow, run_workflow

    wrappers: list[QuickRetryTransport] = []

    def wrap(http: Any) -> QuickRetryTransport | None:
        http._transport = _LockedOnce(http._transport, times=3 if quick else 1)
        wrapper = wrap_local_transport(http) if quick else None
        wrappers.extend([wrapper] if wrapper else [])
        return wrapper

    monkeypatch.setattr(_quick_retry, "wrap_local_transport", wrap)
    caplog.set_level(logging.DEBUG, logger="prefect.client")
    folder = make_workflow({"task.yaml": {"name": "locked"}, "instructions.md": "Answer."})
    if entry == "run_workflow":
        result = run_workflow(folder)
        assert result.status == "completed", result.error
    else:
        assert folder_to_flow(folder)() == {"locked": "ok"}
    flush_artifacts(30)  # its reports, logs and events reach the server before the next test
    drain_prefect_workers()
    backed_off = [r for r in caplog.records if PREFECT_BACKOFF in r.getMessage()]
    if quick:
        assert [w.retried for w in wrappers] == [3] and backed_off == []
    else:
        assert wrappers == [] and len(backed_off) == 1  # 2 s (then 4 s, 8 s, ...)
