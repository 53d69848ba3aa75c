"""What went wrong with a run's stores, for its run document (Prefect-free).

Two things are reported, each once per entry, as a coded warning in the log and in the run
document's ``warnings`` (``folpipe run --json``, the summary):

* **FP540**: an entry that failed authentication (``compile.storekey``): never used, a miss;
* **FP541**: a checkpoint or journal entry that could not be written (a full disk, a storage
  error). Nothing partial is left, the run goes on, and a run that completes with one is
  *not durable*: ``folpipe run`` exits 3, and the next run re-runs what was not stored.

The run's collector lives in a context variable set by ``run_root``; stores reached outside a
run (another process, a Dask worker) only log.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

LOG = logging.getLogger("prefect_folpipe.compile")
FORGED = "FP540"
UNSAVED = "FP541"


@dataclass
class StoreEvent:
    """One entry that failed its check or could not be written."""

    code: str
    store: str
    """``checkpoint``, ``journal`` or ``approval``."""
    entry: str
    """The entry's key (a file name under the result storage)."""
    message: str
    task: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "task": self.task,
            "store": self.store,
            "entry": self.entry,
            "message": self.message,
        }


class StoreEvents:
    """The store events of one run."""

    def __init__(self) -> None:
        self.events: list[StoreEvent] = []
        self._seen: set[tuple[str, str]] = set()
        self._owners: dict[str, str] = {}

    def add(self, event: StoreEvent) -> bool:
        """Keep ``event``; ``False`` when its entry was already reported with that code."""
        mark = (event.code, event.entry)
        if mark in self._seen:
            return False
        self._seen.add(mark)
        if event.task is None:
            event.task = self._owners.get(_name(event.entry))
        self.events.append(event)
        return True

    def own(self, entry: str, task: str) -> None:
        """``entry`` (a checkpoint key) belongs to ``task``: its events, earlier or later,
        name it (Prefect writes a checkpoint inside a branch only when the branch ends)."""
        self._owners[_name(entry)] = task
        for event in self.events:
            if event.task is None and _name(event.entry) == _name(entry):
                event.task = task

    @property
    def durable(self) -> bool:
        """Nothing the run meant to keep was lost."""
        return not any(event.code == UNSAVED for event in self.events)

    def warnings(self) -> list[dict[str, Any]]:
        return [event.to_dict() for event in self.events]


def _name(entry: str) -> str:
    """A checkpoint's key, whether given as a key or as the path it is stored at."""
    return entry.replace("\\", "/").rsplit("/", 1)[-1]


_CURRENT: ContextVar[StoreEvents | None] = ContextVar("folpipe_store_events", default=None)


def current() -> StoreEvents | None:
    return _CURRENT.get()


@contextlib.contextmanager
def collecting(events: StoreEvents) -> Iterator[StoreEvents]:
    """Collect the store events of the code run inside (a run)."""
    token = _CURRENT.set(events)
    try:
        yield events
    finally:
        _CURRENT.reset(token)


def report(code: str, store: str, entry: str, message: str, task: str | None = None) -> None:
    """Log ``[code] message`` once per entry of the current run, and keep it for its report."""
    events = _CURRENT.get()
    if events is not None and not events.add(StoreEvent(code, store, entry, message, task)):
        return
    LOG.warning("[%s] %s", code, message)


def forged(store: str, entry: str, reason: str, consequence: str, task: str | None = None) -> None:
    """FP540: the ``store`` entry ``entry`` failed its check and is not used."""
    report(FORGED, store, entry, f"ignoring {store} entry {entry}: {reason}; {consequence}", task)


def unsaved(store: str, entry: str, error: BaseException, task: str | None = None) -> None:
    """FP541: the ``store`` entry ``entry`` could not be written."""
    reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
    message = (
        f"{store} entry {entry} was not written ({reason}): the run goes on, but it is not "
        "durable; a resume or the next run does this work again"
    )
    report(UNSAVED, store, entry, message, task)
