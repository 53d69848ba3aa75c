"""The ``folpipe`` CLI run in the test's own process, answering as ``subprocess.run`` does.

For tests of what a command prints and exits with, not of the process itself (a fresh
interpreter, signals, kills, start-up): the same ``main(argv)`` the console script calls,
without the second or two a new process spends importing Prefect. The command sees the
Prefect API given (``api_url``; ``None``: no API configured, as in a shell without
``PREFECT_API_URL``), in its settings and in the environment. An exception that escapes the
command is printed to stderr with its traceback, as the interpreter would print it, so a
test that asserts "no traceback" still sees one.
"""

from __future__ import annotations

import os
import subprocess
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["folpipe_in_process"]


@contextmanager
def _api(api_url: str | None, env: Mapping[str, str]) -> Iterator[None]:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    saved = dict(os.environ)
    os.environ.pop("PREFECT_API_URL", None)
    os.environ.update(env)
    if api_url is not None:
        os.environ["PREFECT_API_URL"] = api_url
    settings: dict[str, Any] = (
        {"updates": {PREFECT_API_URL: api_url}}
        if api_url is not None
        else {"restore_defaults": {PREFECT_API_URL}}
    )
    try:
        with temporary_settings(**settings):
            yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def folpipe_in_process(
    *args: str, api_url: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``folpipe ARGS`` in this process: its exit code, stdout and stderr."""
    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    with _api(api_url, env or {}):
        result = CliRunner().invoke(cli, list(args), prog_name="folpipe")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        error = result.exception
        printed = traceback.format_exception(type(error), error, error.__traceback__)
        stderr += "".join(printed)
    return subprocess.CompletedProcess(["folpipe", *args], result.exit_code, result.stdout, stderr)
