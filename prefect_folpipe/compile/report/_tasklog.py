"""A task run's INFO lines, sent to Prefect as one log entry per second instead of one each.

The agent logs every model call and tool call. At scale those lines are most of what the
Prefect server records for a quick task (three rows for a task that calls one tool), and a
SQLite server spends a fifth of its recording time inserting them. :class:`CoalescedLog` keeps
every line, in order, and hands them on joined by newlines: the first INFO line of a quiet
period starts a one-second window, and the lines that arrive within it go out together when it
closes, when a warning or error comes (that goes after them), or when the task ends. Prefect's
API log handler ships its batches every two seconds anyway, so the UI shows a line no later
than it would have; a task that runs for minutes still shows its progress live.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

WINDOW_S = 1.0


class CoalescedLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """``logger`` with its INFO lines grouped per ``window`` seconds; call :meth:`close` at the
    task's end. Without a running event loop in the caller's thread a line goes out at once."""

    def __init__(
        self, logger: logging.Logger | logging.LoggerAdapter[Any], window: float = WINDOW_S
    ) -> None:
        super().__init__(logger, None)  # type: ignore[arg-type]
        self._window = window
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._due: asyncio.TimerHandle | None = None

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        loop = _running_loop()
        if level != logging.INFO or kwargs or loop is None:
            self.flush()
            self.logger.log(level, msg, *args, **kwargs)
            return
        try:
            line = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            line = " ".join(str(part) for part in (msg, *args))
        with self._lock:
            self._lines.append(line)
            if self._due is None:
                self._due = loop.call_later(self._window, self._window_closed)

    def flush(self) -> None:
        """Send the lines held so far as one entry."""
        with self._lock:
            lines, self._lines = self._lines, []
        if lines:
            self.logger.info("\n".join(lines))

    def close(self) -> None:
        """Send what is held and stop the window's timer."""
        with self._lock:
            due, self._due = self._due, None
        if due is not None:
            due.cancel()
        self.flush()

    def _window_closed(self) -> None:
        with self._lock:
            self._due = None
        self.flush()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
