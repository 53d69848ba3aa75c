"""What a run's console shows of a logged exception: a traceback only for warnings and errors
that are not folpipe's own coded errors (their message says it all)."""

from __future__ import annotations

import io
import logging

from prefect_folpipe.cli.run import _NoFolpipeTracebacks
from prefect_folpipe.errors import ConfigError


def _console(records: list[tuple[int, BaseException]]) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(_NoFolpipeTracebacks())
    logger = logging.getLogger("tests.console.tracebacks")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        for level, exc in records:
            try:
                raise exc
            except BaseException:
                logger.log(level, "note: %s", type(exc).__name__, exc_info=True)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_info_lines_and_coded_errors_print_no_traceback_other_warnings_do() -> None:
    out = _console(
        [
            (logging.INFO, ConnectionResetError("closed during teardown")),  # distributed's note
            (logging.ERROR, ConfigError("bad provider", code="FP300")),
            (logging.WARNING, ValueError("unexpected")),
        ]
    )
    assert "note: ConnectionResetError" in out and "note: ConfigError" in out
    assert out.count("Traceback (most recent call last)") == 1
    assert "ValueError: unexpected" in out
    assert "closed during teardown" not in out and "bad provider" not in out
