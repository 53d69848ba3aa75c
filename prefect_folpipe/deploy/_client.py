"""The Prefect API client of a folpipe command (status, resume, approvals, deploy, re-run).

Over plain ``http://`` it skips the CA bundle Prefect would load into a new TLS context
(15-30 ms per client), as a run's own clients do; an ``https://`` API keeps Prefect's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compile.plainhttp import plain_http_settings

if TYPE_CHECKING:
    from prefect.client.orchestration import PrefectClient


def api_client() -> PrefectClient:
    """A client of the API the current settings name (read now: a temporary server started
    by ``ensure_api`` counts), to be used as ``async with api_client() as client``."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    return get_client(httpx_settings=plain_http_settings(PREFECT_API_URL.value()))
