"""Infrastructure around a run: the Prefect API (a running server or a temporary one), the
run's Prefect clients (quick retries of a local server's "database is locked"), failures
outside the workflow as coded errors, crashed-run recovery, the call guard (rate limits,
global concurrency limits) and Prefect Secret blocks.
"""

from __future__ import annotations

from ._callguard import make_call_guard
from ._clients import run_clients
from ._console import prefix_every_line
from ._ephemeral import guard_temporary_server
from ._faults import infrastructure_error, interruption
from ._recovery import settle_crashed_runs, settle_earlier_attempt
from ._secrets import prefect_secret_resolver
from ._server import SETTLE, ensure_api, uses_temporary_server

__all__ = [
    "SETTLE",
    "ensure_api",
    "guard_temporary_server",
    "infrastructure_error",
    "interruption",
    "make_call_guard",
    "prefect_secret_resolver",
    "prefix_every_line",
    "run_clients",
    "settle_crashed_runs",
    "settle_earlier_attempt",
    "uses_temporary_server",
]
