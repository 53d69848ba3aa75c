"""The Prefect API as ``folpipe resume`` talks to it: configured or not, one conversation."""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import ConfigError

WATCH_TIMEOUT_S = 24 * 3600.0


def api_configured() -> bool:
    from prefect.settings import get_current_settings

    return bool(get_current_settings().api.url)


def through_api(coroutine: Any) -> Any:
    """Run one API conversation; an unreachable server is FP616, not a traceback."""
    import httpx

    try:
        return asyncio.run(coroutine)
    except (httpx.HTTPError, OSError) as exc:
        raise ConfigError(
            f"cannot reach the Prefect API: {exc}",
            code="FP616",
            hint="is the server running? check PREFECT_API_URL (unset it to resume locally)",
        ) from None
