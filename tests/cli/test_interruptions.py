"""``interruptions()``: SIGTERM and Ctrl-C (SIGINT) stop a run the same way, as a
``SignalInterrupt`` raised in the main thread; an ignored SIGINT (``nohup``) stays ignored."""

from __future__ import annotations

import os
import signal
import time

import pytest

from prefect_folpipe.cli._interrupts import SignalInterrupt, interruptions


def _deliver(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.2)  # the handler runs at the next bytecode of the main thread


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("start", ["default", "another handler"])
def test_a_signal_raises_signal_interrupt_and_handlers_come_back(signum: int, start: str) -> None:
    """Whatever handler was there (Python's, or one a library left) comes back after."""
    if start == "default":
        signal.signal(
            signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        )
    else:
        signal.signal(signum, lambda *_: None)
    before = signal.getsignal(signum)
    with pytest.raises(SignalInterrupt) as raised, interruptions() as received:
        _deliver(signum)
    assert raised.value.signal == signum == received.signal
    assert signal.getsignal(signum) is before


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interruptions() as received:
            _deliver(signal.SIGINT)
        assert received.signal is None
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
