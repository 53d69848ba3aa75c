"""Prefect clients of a plain ``http://`` API, without the CA bundle.

Prefect builds a TLS context from the ``certifi`` bundle for every client it makes (15-30 ms
each, several per run) although no TLS is spoken over ``http://``. A client of such an API
gets a context that trusts no certificate instead: should TLS ever be spoken through it, the
handshake fails. An ``https://`` API keeps Prefect's own (its certificate settings apply).
"""

from __future__ import annotations

import functools
import ssl
from typing import Any


def plain_http_settings(api_url: str | None) -> dict[str, Any] | None:
    """``httpx_settings`` for a Prefect client of ``api_url``: the no-trust TLS context for
    plain ``http://``; ``None`` (Prefect's own) for anything else."""
    if not api_url or not api_url.strip().lower().startswith("http://"):
        return None
    return {"verify": _trusts_nothing()}


@functools.cache
def _trusts_nothing() -> ssl.SSLContext:
    """Verifies certificates and host names, with no authority to trust (about 1 ms)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
