"""Every terminal line of a coalesced task log carries Prefect's prefix; the API's copy of the
record stays one entry, and tracebacks keep their shape."""

from __future__ import annotations

import io
import logging
import re

import pytest
from prefect.logging.formatters import PrefectFormatter

from prefect_folpipe.compile.infra._console import EveryLinePrefixed, prefix_every_line
from prefect_folpipe.compile.report._tasklog import CoalescedLog

PREFIX = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| INFO    \| folpipe\.test\.consolelines - ")
STANDARD = "%(asctime)s.%(msecs)03d | %(levelname)-7s | %(name)s - %(message)s"


class _Kept(logging.Handler):
    """Stands for Prefect's API handler: keeps the records it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def task_logger():
    logger = logging.getLogger("folpipe.test.consolelines")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    stream = io.StringIO()
    console = logging.StreamHandler(stream)
    console.setFormatter(EveryLinePrefixed(PrefectFormatter(STANDARD, datefmt="%H:%M:%S")))
    api = _Kept()
    logger.addHandler(console)
    logger.addHandler(api)
    adapter = logging.LoggerAdapter(
        logger, {"task_run_name": "research", "task_run_id": "1", "task_name": "research"}
    )
    yield adapter, stream, api
    logger.removeHandler(console)
    logger.removeHandler(api)


async def test_each_line_of_a_coalesced_entry_has_the_prefix(task_logger):
    adapter, stream, api = task_logger
    log = CoalescedLog(adapter, window=60)
    log.info("model call 1: 10 in / 5 out tokens, 1 tool call")
    log.info("tool today ok in %.3fs", 0.013)
    log.close()
    printed = stream.getvalue().splitlines()
    assert len(printed) == 2
    assert all(PREFIX.match(line) for line in printed), printed
    assert printed[1].endswith("- tool today ok in 0.013s")
    [entry] = api.records  # the API gets one entry, its lines joined
    assert entry.getMessage() == (
        "model call 1: 10 in / 5 out tokens, 1 tool call\ntool today ok in 0.013s"
    )


def test_a_traceback_is_printed_as_usual(task_logger):
    adapter, stream, _ = task_logger
    try:
        raise ValueError("first\nsecond")
    except ValueError:
        adapter.exception("failed:\nhere")
    text = stream.getvalue()
    assert re.match(r"^\d\d:\d\d:\d\d\.\d{3} \| ERROR   \| ", text)  # then the traceback
    assert "failed:\nhere\nTraceback" in text


def test_the_console_handlers_are_wrapped_once_and_others_left_alone():
    root = logging.getLogger()
    console = logging.StreamHandler(io.StringIO())
    console.setFormatter(logging.Formatter("%(levelname)s | %(message)s"))
    kept = _Kept()
    root.addHandler(console)
    root.addHandler(kept)
    try:
        prefix_every_line()
        prefix_every_line()
        assert isinstance(console.formatter, EveryLinePrefixed)
        assert not isinstance(console.formatter.inner, EveryLinePrefixed)
        assert kept.formatter is None
        record = logging.LogRecord("x", logging.WARNING, __file__, 1, "a\nb", None, None)
        assert console.format(record) == "WARNING | a\nWARNING | b"
    finally:
        root.removeHandler(console)
        root.removeHandler(kept)


def test_a_workers_drain_progress_line_is_not_printed(caplog) -> None:
    """Prefect's "Still processing items: 1 items remaining..." as its event worker drains at
    exit is a WARNING with nothing to do about it: not printed; its other warnings are."""
    prefix_every_line()
    prefix_every_line()  # idempotent
    logger = logging.getLogger("EventsWorker")
    assert sum(type(f).__name__ == "NoDrainProgress" for f in logger.filters) == 1
    with caplog.at_level(logging.WARNING, logger="EventsWorker"):
        logger.warning("Still processing items: 1 items remaining...")
        logger.warning("could not send an event")
    assert [r.getMessage() for r in caplog.records] == ["could not send an event"]
