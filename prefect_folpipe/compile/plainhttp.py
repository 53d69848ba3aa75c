"""Prefect clients of a plain ``http://`` API, without the CA bundle.

Prefect builds a TLS context from the ``certifi`` bundle for every client it makes (15-30 ms
each, several per run) although no TLS is spoken over ``http://``. A client of such an API
gets a context that trusts no certificate instead: should TLS ever be spoken through it, the
handshake fails. An ``https://`` API keeps Prefect's own (its certificate settings apply).
"""

from __future__ import annotations

import functools
import ssl
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefect.client.orchestration import PrefectClient


def plain_http_settings(api_url: str | None) -> dict[str, Any] | None:
    """``httpx_settings`` for a Prefect client of ``api_url``: the no-trust TLS context for
    plain ``http://``; ``None`` (Prefect's own) for anything else."""
    if not api_url or not api_url.strip().lower().startswith("http://"):
        return None
    return {"verify": _trusts_nothing()}


def api_client() -> PrefectClient:
    """A Prefect client of the API the current settings name (read now: a temporary server
    started meanwhile counts), with :func:`plain_http_settings`; for ``async with``."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    return get_client(httpx_settings=plain_http_settings(PREFECT_API_URL.value()))


@functools.cache
def _trusts_nothing() -> ssl.SSLContext:
    """Verifies certificates and host names, with no authority to trust (about 1 ms)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
