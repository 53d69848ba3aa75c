"""Prefect's log and event workers drained while the server is still up (tests import this
module directly: ``from conftest import ...`` finds whichever ``conftest`` was imported first)."""

from __future__ import annotations


def drain_prefect_workers() -> None:
    """Send the logs and events Prefect still holds while the server is up: otherwise its log
    worker keeps retrying a stopped server, and the process hangs at exit for a minute."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=30)
    EventsWorker.drain_all(timeout=30)
