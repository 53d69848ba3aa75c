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
from typing import Any

from ..plainhttp import plain_http_settings
from . import _quick_retry


@contextlib.asynccontextmanager
async def run_clients() -> AsyncIterator[None]:
    """The clients a top-level run uses (see the module docstring). Inside an existing
    client context: that one, unchanged."""
    from prefect.context import AsyncClientContext

    if AsyncClientContext.get() is not None:
        yield
        return
    run, sync = _contexts()
    async with run:
        _quick_retry.wrap_local_transport(run.client._client)
        with sync or contextlib.nullcontext():
            yield


def _contexts() -> tuple[Any, Any]:
    """The run's async client context, and its sync one (``None``: Prefect makes its own)."""
    from prefect.client.orchestration import get_client
    from prefect.context import AsyncClientContext, SyncClientContext
    from prefect.settings import PREFECT_API_URL

    settings = plain_http_settings(PREFECT_API_URL.value())
    if settings is None:
        return AsyncClientContext(), None
    # built as Prefect builds them, with clients of these settings, yet as contexts of the
    # default ones: every get_client() of the run is handed these two
    run = AsyncClientContext.model_construct(client=get_client(httpx_settings=settings))
    if SyncClientContext.get() is not None:
        return run, None
    sync = SyncClientContext.model_construct(
        client=get_client(sync_client=True, httpx_settings=settings)
    )
    return run, sync
