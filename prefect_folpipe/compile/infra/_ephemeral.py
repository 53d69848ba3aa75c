"""Prefect's temporary server ends with the process that started it, even on SIGKILL.

Without ``PREFECT_API_URL``, the first Prefect client of a process starts a temporary API
server as a subprocess (``SubprocessASGIServer``) and stops it at exit. A killed process never
stops it: the server (≈240 MB) lingered. ``guard_temporary_server()`` makes every server
process Prefect starts for this process known to the watchdog (``tools.watchdog``), which
stops it once this process is gone.
"""

from __future__ import annotations

import logging
from typing import Any

from ...tools.watchdog import WATCHDOG

LOG = logging.getLogger("prefect_folpipe.compile")
_GUARDED = "_folpipe_guarded"


def guard_temporary_server() -> None:
    """Hand the temporary server to the watchdog as Prefect starts it (idempotent; nothing
    to do with an API URL set)."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    try:
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()  # the instance Prefect's get_client() starts
    except Exception as exc:  # Prefect moved it: the server is stopped at exit as before
        LOG.debug("temporary server not guarded: %s", exc)
        return
    if getattr(server, _GUARDED, False):
        return
    if server.server_process is not None:  # already started in this process
        WATCHDOG.guard_process(server.server_process.pid)
    start = getattr(server, "_run_uvicorn_command", None)
    if start is None:
        return

    def start_guarded() -> Any:
        process = start()
        WATCHDOG.guard_process(process.pid)
        return process

    server._run_uvicorn_command = start_guarded  # type: ignore[method-assign]
    setattr(server, _GUARDED, True)
