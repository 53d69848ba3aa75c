"""Every terminal line of a log record carries its prefix (``HH:MM:SS.mmm | INFO | ...``).

A task's INFO lines reach Prefect as one record per second (``compile.tasklog``), joined by
newlines: the Prefect API and the UI get that one entry, but a console handler would print
its second and later lines bare. :func:`prefix_every_line` wraps the formatter of the console
handlers so each line of a multi-line message is formatted as a record of its own; the API
handler, which does not print, is left as it is. Tracebacks keep their usual shape.

Prefect logs a run ending in any state but ``Completed`` as an ERROR; a task whose approval
gate was declined ends ``Declined`` (a Cancelled state), and a deployment's flow run waiting
for a gate's answer ends ``Suspended``, both by design: those lines are logged as INFO
(``GateLinesAsInfo``).

Prefect's event and log workers say "Still processing items: 1 items remaining..." as a
WARNING when they are drained while a few items are left, which every exit does; those lines
are not printed (``NoDrainProgress``).
"""

from __future__ import annotations

import copy
import logging

CONSOLE_LOGGERS = ("", "prefect", "prefect.flow_runs", "prefect.task_runs")


class EveryLinePrefixed(logging.Formatter):
    """Formats each line of a multi-line message with ``inner``, as if logged one by one."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if "\n" not in message or record.exc_info or record.stack_info:
            return self.inner.format(record)
        lines = []
        for line in message.split("\n"):
            one = copy.copy(record)
            one.msg, one.args = line, None
            lines.append(self.inner.format(one))
        return "\n".join(lines)


class GateLinesAsInfo(logging.Filter):
    """Prefect's ``Finished in state Declined(...)`` / ``Suspended(...)`` line is INFO, not
    ERROR: the gate said no, or the run waits for its answer."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(GATE_LINES):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


GATE_LINES = ("Finished in state Declined(", "Finished in state Suspended(")
DRAINED_WORKERS = ("EventsWorker", "APILogWorker")
"""The loggers of Prefect's queue services (named after their class)."""


class NoDrainProgress(logging.Filter):
    """Not Prefect's "Still processing items: N items remaining..." of a worker's drain."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Still processing items")


def quiet_drains() -> None:
    """Install :class:`NoDrainProgress` on Prefect's queue services' loggers (idempotent)."""
    for name in DRAINED_WORKERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, NoDrainProgress) for f in logger.filters):
            logger.addFilter(NoDrainProgress())


def prefix_every_line() -> None:
    """Wrap the formatters of the console handlers (idempotent; Prefect's API handler is not a
    console handler and keeps the record whole); a declined gate's last line is INFO;
    no drain progress lines."""
    quiet_drains()
    for name in ("prefect.task_runs", "prefect.flow_runs"):
        runs = logging.getLogger(name)
        if not any(isinstance(f, GateLinesAsInfo) for f in runs.filters):
            runs.addFilter(GateLinesAsInfo())
    for name in CONSOLE_LOGGERS:
        for handler in logging.getLogger(name).handlers:
            console = isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler
            )
            formatter = handler.formatter or logging.Formatter()
            if console and not isinstance(formatter, EveryLinePrefixed):
                handler.setFormatter(EveryLinePrefixed(formatter))
