"""The Prefect clients of a top-level run, opened once for the whole run.

* The async client is the one the flow engine takes from the context; toward a server on
  this machine it asks again quickly on "database is locked" (``_quick_retry``).
* The sync client is the one Prefect's sync helpers ask for during the run (the flow engine
  resolves the run's result storage through one on every flow run).
* Toward a plain ``http://`` API both are made without the CA bundle (``plainhttp``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from ..plainhttp import plain_http_settings
from . import _quick_retry


@contextlib.asynccontextmanager
async def run_clients() -> AsyncIterator[None]:
    """The clients a top-level run uses (see the module docstring). Inside an existing
    client context: that one, unchanged."""
    from prefect.client.orchestration import get_client
    from prefect.context import AsyncClientContext, SyncClientContext
    from prefect.settings import PREFECT_API_URL

    if AsyncClientContext.get() is not None:
        yield
        return
    settings = plain_http_settings(PREFECT_API_URL.value())
    if settings is None:
        async with AsyncClientContext() as context:
            _quick_retry.wrap_local_transport(context.client._client)
            yield
        return
    # built as Prefect builds them, with their own client; as contexts "of default
    # settings", so that every get_client() of the run is handed these two
    run = AsyncClientContext.model_construct(client=get_client(httpx_settings=settings))
    sync = None
    if SyncClientContext.get() is None:
        sync = SyncClientContext.model_construct(
            client=get_client(sync_client=True, httpx_settings=settings)
        )
    async with run:
        _quick_retry.wrap_local_transport(run.client._client)
        with sync or contextlib.nullcontext():
            yield
