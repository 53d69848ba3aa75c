"""A top-level run's Prefect clients: opened once for the run, every ``get_client()`` of the
run handed them, and toward a plain ``http://`` API made without loading the CA bundle
(Prefect loads ``certifi``'s for every client it makes: 15-30 ms each) while an ``https://``
API keeps Prefect's own TLS context.

* the TLS context of a plain-http client verifies certificates and host names and trusts no
  authority: a handshake through it can only fail;
* inside ``run_clients()``: the async and the sync client Prefect's code asks for are the
  run's, made without a CA bundle; toward ``https://`` Prefect builds its own;
* a whole run on the session's server (``http://127.0.0.1``), and its reports written after
  it, load no CA bundle.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import traceback
from typing import Any

import pytest
from drain import drain_prefect_workers

from prefect_folpipe.compile.infra import run_clients
from prefect_folpipe.compile.plainhttp import api_client, plain_http_settings

CLIENTS = os.path.join("prefect", "client", "orchestration")
OURS = os.path.join("prefect_folpipe", "")


@pytest.fixture
def bundles_loaded(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every TLS context a Prefect API client of folpipe's makes with a CA bundle from now
    on: not the transports some Prefect modules make as they are imported, nor the clients
    of the log and event workers Prefect starts once per process."""
    made: list[Any] = []
    create = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        files = [frame.filename for frame in traceback.extract_stack()]
        if any(CLIENTS in name for name in files) and any(OURS in name for name in files):
            made.append("".join(traceback.format_stack(limit=14)))
        return create(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    return made


def _offline(url: str) -> Any:
    """``url`` as the API, which is never asked (no version check: no request is made)."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED,
        temporary_settings,
    )

    updates = {PREFECT_API_URL: url, PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED: False}
    return temporary_settings(updates=updates)


@pytest.mark.parametrize("url", ["http://127.0.0.1:4200/api", "HTTP://prefect.internal/api"])
def test_a_plain_http_client_trusts_no_certificate(url: str) -> None:
    context = plain_http_settings(url)["verify"]  # type: ignore[index]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # nothing to trust: TLS fails closed


@pytest.mark.parametrize("url", ["https://api.prefect.cloud/api/accounts/a/workspaces/w", "", None])
def test_anything_but_plain_http_keeps_prefects_own(url: str | None) -> None:
    assert plain_http_settings(url) is None


async def test_every_client_of_the_run_is_the_runs_and_loads_no_bundle(
    bundles_loaded: list[Any],
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.context import AsyncClientContext, SyncClientContext

    with _offline("http://127.0.0.1:9/api"):
        async with run_clients():
            run, sync = AsyncClientContext.get(), SyncClientContext.get()
            assert run is not None and sync is not None
            assert get_client() is run.client
            assert get_client(sync_client=True) is sync.client
            with get_client(sync_client=True) as again:  # Prefect's own code enters it too
                assert again is sync.client
        assert AsyncClientContext.get() is None and SyncClientContext.get() is None
    assert bundles_loaded == [], bundles_loaded[0]


async def test_an_https_api_keeps_prefects_tls_context(bundles_loaded: list[Any]) -> None:
    from prefect.context import AsyncClientContext, SyncClientContext

    with _offline("https://prefect.example.invalid/api"):
        async with run_clients():
            assert AsyncClientContext.get() is not None
            assert SyncClientContext.get() is None  # Prefect makes its own when asked
    assert len(bundles_loaded) == 1  # Prefect's, with its certificate settings


@pytest.mark.slow
def test_a_run_and_its_reports_load_no_bundle(
    prefect_harness: str, make_workflow: Any, bundles_loaded: list[Any]
) -> None:
    from prefect_folpipe.compile import flush_artifacts, run_workflow

    assert prefect_harness.startswith("http://")
    folder = make_workflow({"task.yaml": {"name": "plain"}, "instructions.md": "Answer."})
    result = run_workflow(folder)
    assert result.status == "completed", result.error
    assert flush_artifacts(30)
    drain_prefect_workers()
    assert bundles_loaded == [], bundles_loaded[0]


@pytest.mark.parametrize(
    ("url", "bundles"), [("http://127.0.0.1:9/api", 0), ("https://x.invalid/api", 1)]
)
async def test_a_commands_client_loads_a_bundle_only_for_https(
    bundles_loaded: list[Any], url: str, bundles: int
) -> None:
    """``folpipe status``, ``resume``, ``approvals``, ``deploy``: one client each, made like
    the run's and the report writer's (``compile.plainhttp.api_client``)."""
    with _offline(url):
        async with api_client() as client:
            assert client.api_url is not None
    assert len(bundles_loaded) == bundles


@pytest.mark.slow
def test_status_reads_the_history_without_a_bundle(
    prefect_harness: str, make_workflow: Any, bundles_loaded: list[Any]
) -> None:
    from prefect_folpipe.compile import flush_artifacts, run_workflow
    from prefect_folpipe.deploy.status import recent_runs
    from prefect_folpipe.loader import load

    folder = make_workflow({"task.yaml": {"name": "plain"}, "instructions.md": "Answer."})
    assert run_workflow(folder).status == "completed"
    assert flush_artifacts(30)
    workflow = load(folder, import_tools=False).workflow
    assert workflow is not None
    runs = asyncio.run(recent_runs(workflow))
    assert [run.state for run in runs] == ["Completed"]
    drain_prefect_workers()
    assert bundles_loaded == [], bundles_loaded[0]
