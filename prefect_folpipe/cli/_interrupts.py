"""SIGTERM stops a run the way Ctrl-C does, and either ends in a report, not a traceback.

Python's default SIGTERM kills the process on the spot; during a flow run Prefect turns it into
a ``TerminationSignal`` that escaped as a traceback. Under :func:`interruptions` a SIGTERM
raises ``SignalInterrupt`` (a ``KeyboardInterrupt`` that knows its signal) in the main thread:
Prefect marks the flow run ``Crashed`` as for Ctrl-C, the run records what finished
(``interrupted``), tool process groups are killed on the way out, and the command reports the
coded error FP522. A second SIGTERM while that happens is ignored (SIGKILL still works).

Ctrl-C (SIGINT) takes the same path. Left to ``asyncio.run``, a first Ctrl-C only cancels the
run's main task, and any code on the way that catches the cancellation absorbs it. An
ignored SIGINT (a ``nohup`` or background job) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


class SignalInterrupt(KeyboardInterrupt):
    """A signal (SIGTERM, SIGINT) stopping the run; ``signal`` is its number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signal = signum


@dataclass
class Received:
    """The signal that stopped the command, if any."""

    signal: int | None = None


@contextmanager
def interruptions() -> Iterator[Received]:
    """Turn SIGTERM and SIGINT into ``SignalInterrupt`` while the block runs (main thread
    only)."""
    received = Received()
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_signal(signum: int, _frame: Any) -> None:
        if received.signal is not None:
            return  # already stopping
        received.signal = signum
        raise SignalInterrupt(signum)

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, on_signal)}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, on_signal)
    try:
        yield received
    finally:
        for signum, handler in previous.items():  # None: a handler not set from Python
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
