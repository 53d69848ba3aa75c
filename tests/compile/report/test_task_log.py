"""A task run's INFO lines grouped into one log entry per window, in order, nothing dropped."""

from __future__ import annotations

import asyncio
import logging

import pytest

from prefect_folpipe.compile.report._tasklog import CoalescedLog
from prefect_folpipe.redaction import redacting


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="folpipe.test.tasklog")
    return caplog


def _records(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "folpipe.test.tasklog"]


async def _sent(caplog: pytest.LogCaptureFixture, count: int) -> None:
    """Wait (5 s at most) until ``count`` entries went out: the window closes on its own."""
    deadline = asyncio.get_running_loop().time() + 5
    while len(_records(caplog)) < count and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


LINES = ("model call 1: 1 tool call(s)", "tool lookup ok in 0.002s", "model call 2: 0 tool call(s)")


async def test_lines_within_the_window_go_out_as_one_entry_in_order(captured):
    log = CoalescedLog(logging.getLogger("folpipe.test.tasklog"), window=60)
    log.info("model call %d: %d tool call(s)", 1, 1)  # LINES[0]
    log.info("tool lookup ok in %.3fs", 0.002)
    log.info("model call 2: 0 tool call(s)")
    assert _records(captured) == []  # held while the window is open
    log.close()
    assert _records(captured) == [(logging.INFO, "\n".join(LINES))]
    log.close()  # closing twice sends nothing more
    assert len(_records(captured)) == 1


async def test_the_window_closing_sends_what_it_holds_without_waiting_for_the_task(captured):
    log = CoalescedLog(logging.getLogger("folpipe.test.tasklog"), window=0.05)
    log.info("first")
    log.info("second")
    await _sent(captured, 1)
    assert _records(captured) == [(logging.INFO, "first\nsecond")]
    log.info("third")  # a new window opens
    await _sent(captured, 2)
    assert _records(captured)[-1] == (logging.INFO, "third")
    log.close()
    assert len(_records(captured)) == 2


async def test_a_warning_goes_out_after_the_lines_held_before_it(captured):
    log = CoalescedLog(logging.getLogger("folpipe.test.tasklog"), window=60)
    log.info("model call 1")
    log.warning("tool %s failed", "lookup")
    log.info("model call 2")
    log.close()
    assert _records(captured) == [
        (logging.INFO, "model call 1"),
        (logging.WARNING, "tool lookup failed"),
        (logging.INFO, "model call 2"),
    ]


def test_without_an_event_loop_each_line_goes_out_at_once(captured):
    log = CoalescedLog(logging.getLogger("folpipe.test.tasklog"), window=60)
    log.info("hook output: %s", "done")
    assert _records(captured) == [(logging.INFO, "hook output: done")]


async def test_lines_below_the_loggers_level_are_not_held(caplog):
    caplog.set_level(logging.WARNING, logger="folpipe.test.tasklog")
    log = CoalescedLog(logging.getLogger("folpipe.test.tasklog"), window=60)
    log.info("quiet")
    log.close()
    assert _records(caplog) == []


async def test_behind_the_redacting_logger_masked_lines_are_what_is_held(captured, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value")
    log = CoalescedLog(logging.getLogger("folpipe.test.tasklog"), window=60)
    redacting(log).info("calling with %s", "sk-very-secret-value")
    log.close()
    [(_, message)] = _records(captured)
    assert "sk-very-secret-value" not in message and message.startswith("calling with ")
