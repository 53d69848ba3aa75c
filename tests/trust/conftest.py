"""Helpers for the trust tests (issue 11): the CLI against the session server, or offline."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]


def _folpipe(env: Mapping[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=240,
    )


@pytest.fixture
def folpipe(cli_env: dict[str, str]) -> Cli:
    """``folpipe(*args, env=None)``: the CLI in a subprocess, against the session server."""

    def go(*args: str | Path, env: Mapping[str, str] | None = None) -> Any:
        return _folpipe({**cli_env, **(env or {})}, *args)

    return go


@pytest.fixture
def folpipe_offline() -> Cli:
    """The CLI for commands that never start Prefect (validate, tree, graph)."""
    import os

    def go(*args: str | Path, env: Mapping[str, str] | None = None) -> Any:
        return _folpipe({**os.environ, **(env or {})}, *args)

    return go
