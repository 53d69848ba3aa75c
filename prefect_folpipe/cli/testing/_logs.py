"""Where ``folpipe test`` sends Prefect's run logs, and how its flow runs are marked.

Without ``-v`` the terminal shows the result table only: every console log handler (Prefect's,
and the root's that folpipe's own loggers reach) writes to one log file instead, and the
temporary server's start and stop lines go there too. The Prefect API still gets every log.
A case that expects a failure does not log it at ERROR: Prefect's "Finished in state Failed"
of a flow run (the case expects ``status: failed``) or of a task run the case lists under
``expect.failed`` is logged at INFO.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ...workflow.names import slug

TEST_TAG = "folpipe-test"
"""The tag of every flow run (and task run) a ``folpipe test`` case creates."""
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
FINISHED = "Finished in state"
LOOP_INDEX = re.compile(r"\[\d+\]")


def log_file(workflow_name: str) -> Path:
    """The log file of ``folpipe test`` for a workflow (overwritten by each invocation)."""
    return Path(tempfile.gettempdir()) / f"folpipe-test-{slug(workflow_name) or 'workflow'}.log"


def _console_handlers() -> Iterator[tuple[logging.Logger, logging.Handler]]:
    loggers = [logging.getLogger()]
    loggers += [
        x for x in logging.Logger.manager.loggerDict.values() if isinstance(x, logging.Logger)
    ]
    for logger in loggers:
        for handler in list(logger.handlers):
            if isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler
            ):
                yield logger, handler


class ConsoleToFile:
    """Swap the console log handlers for handlers writing to one file (``restore`` undoes it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stream: IO[str] | None = None
        self._swapped: list[tuple[logging.Logger, logging.Handler, logging.Handler]] = []

    def write(self, line: str) -> None:
        """A line of folpipe's own (the temporary server's start) into the file."""
        stream = self._open()
        stream.write(line + "\n")
        stream.flush()

    def swap(self) -> None:
        stream = self._open()
        for logger, console in _console_handlers():
            if any(console is new for _, _, new in self._swapped):
                continue
            to_file = logging.StreamHandler(stream)
            to_file.setLevel(console.level)
            to_file.setFormatter(console.formatter)
            for found in console.filters:
                to_file.addFilter(found)
            logger.removeHandler(console)
            logger.addHandler(to_file)
            self._swapped.append((logger, console, to_file))

    def restore(self) -> None:
        for logger, console, to_file in reversed(self._swapped):
            logger.removeHandler(to_file)
            logger.addHandler(console)
        self._swapped.clear()
        if self._stream is not None:
            self._stream.flush()

    def _open(self) -> IO[str]:
        if self._stream is None:
            self._stream = self.path.open("w", encoding="utf-8")  # closed at exit
        return self._stream


@contextlib.contextmanager
def logs_to_file(path: Path | None) -> Iterator[ConsoleToFile | None]:
    """Prefect's console logs go to ``path`` inside the block (``None``: unchanged, ``-v``).

    A temporary server started here is stopped by Prefect at exit, with a log line: that
    line goes to the file too."""
    if path is None:
        yield None
        return
    from prefect.logging.configuration import ensure_logging_setup

    ensure_logging_setup()  # Prefect configures its handlers lazily: now, so they are swapped
    redirect = ConsoleToFile(path)
    redirect.swap()
    try:
        yield redirect
    finally:
        redirect.restore()
    from ...compile.infra import uses_temporary_server

    if uses_temporary_server():  # runs before Prefect's exit hook (registered earlier)
        atexit.register(redirect.swap)


@contextlib.contextmanager
def expected_failures(expect: Mapping[str, Any]) -> Iterator[None]:
    """Inside the block, "Finished in state Failed" of what the case expects to fail is INFO."""
    flow_fails = expect.get("status") == "failed"
    tasks = {str(entry) for entry in expect.get("failed") or []}
    if not flow_fails and not tasks:
        yield
        return

    def lower(record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not str(record.msg).startswith(FINISHED):
            return True
        task_run = getattr(record, "task_run_name", None)
        expected = (
            _names(str(task_run)) & tasks
            if task_run is not None
            else flow_fails and record.name == RUN_LOGGERS[0]
        )
        if expected:
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True

    loggers = [logging.getLogger(name) for name in RUN_LOGGERS]
    for logger in loggers:
        logger.addFilter(lower)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(lower)


def _names(run_name: str) -> set[str]:
    """The path and the name a case may list a task run by: ``research/gather[2] (final
    pass)`` is ``research/gather`` and ``gather``."""
    path = LOOP_INDEX.sub("", run_name.split(" (")[0]).strip()
    return {path, path.rsplit("/", 1)[-1]}
