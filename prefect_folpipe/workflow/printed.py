"""What the workflow's Python code prints goes to the task's log, redacted, never to the
terminal's stdout.

Hooks and python tools run in the folpipe process. A ``print()`` of theirs would reach the
terminal unmasked, and with ``--json`` land on stdout before the JSON document. While such code
runs (:func:`printed_to`), ``sys.stdout`` and ``sys.stderr`` are stand-ins that send what *that
code* writes — in its task, and in the worker threads it runs in (``asyncio.to_thread`` copies
the context) — line by line to the given logger, every secret value masked: stdout at INFO,
stderr at WARNING. Anything else writing at the same time (Prefect, folpipe's own output,
another task) goes to the real streams as before. Code writing to file descriptor 1 directly
(``os.write(1, ...)``, a C extension) is not seen; a subprocess's output is its runner's
(shell tools and hooks capture theirs).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from ..redaction import mask

MAX_LINE = 8192
"""A longer line is logged in pieces of this many characters."""

_SINK: ContextVar[_Sink | None] = ContextVar("folpipe_printed_sink", default=None)
_INSTALL = threading.Lock()


class _Sink:
    """Where one piece of code's output goes: its logger, whole lines, masked."""

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter[Any], label: str) -> None:
        self.logger = logger
        self.label = label
        self._partial = {"stdout": "", "stderr": ""}
        self._lock = threading.Lock()

    def write(self, stream: str, text: str) -> None:
        with self._lock:
            pending = self._partial[stream] + text
            *lines, rest = pending.split("\n")
            while len(rest) > MAX_LINE:
                lines.append(rest[:MAX_LINE])
                rest = rest[MAX_LINE:]
            self._partial[stream] = rest
        for line in lines:
            self._emit(stream, line)

    def close(self) -> None:
        with self._lock:
            left, self._partial = self._partial, {"stdout": "", "stderr": ""}
        for stream, rest in left.items():
            if rest:
                self._emit(stream, rest)

    def _emit(self, stream: str, line: str) -> None:
        level = logging.INFO if stream == "stdout" else logging.WARNING
        token = _SINK.set(None)  # a handler writing to sys.stderr goes to the real stream
        try:
            self.logger.log(level, "%s printed%s: %s", self.label, _on(stream), mask(line))
        except Exception:  # a log handler's failure must not fail the code that printed
            pass
        finally:
            _SINK.reset(token)


def _on(stream: str) -> str:
    return "" if stream == "stdout" else " on stderr"


class _Router(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` while printed code may run: a write goes to the sink of
    the code writing it, else to the stream it stands in for."""

    def __init__(self, real: Any, name: str) -> None:
        super().__init__()
        self.real = real
        self.name_ = name

    def write(self, text: str) -> int:
        sink = _SINK.get()
        if sink is None:
            return int(self.real.write(text) or 0)
        sink.write(self.name_, str(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _SINK.get() is None:
            self.real.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return bool(_SINK.get() is None and self.real.isatty())

    def fileno(self) -> int:
        return int(self.real.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.real, "encoding", "utf-8"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def install() -> None:
    """Put the stand-ins in place (again, if something replaced them since)."""
    with _INSTALL:
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router(sys.stdout, "stdout")
        if not isinstance(sys.stderr, _Router):
            sys.stderr = _Router(sys.stderr, "stderr")


@contextlib.contextmanager
def printed_to(logger: logging.Logger | logging.LoggerAdapter[Any], label: str) -> Iterator[None]:
    """Within this block (and the threads it starts through ``asyncio.to_thread``), what is
    printed goes to ``logger`` as ``<label> printed: <line>``, masked."""
    install()
    sink = _Sink(logger, label)
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
        sink.close()
