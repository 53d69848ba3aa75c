"""Helpers for the trust tests (issue 11): workflow folders from dicts, real runs, the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow


@pytest.fixture
def make_workflow(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(1000))

    def make(files: Mapping[str, Any], name: str | None = None) -> Path:
        return write_workflow(tmp_path / (name or f"wf{next(counter)}"), files)

    return make


@pytest.fixture
def run(prefect_harness: str) -> Callable[..., Any]:
    """``run(path, context=None, **options)`` -> RunResult (real Prefect, session harness)."""
    from prefect_folpipe.compile import run_workflow

    def go(path: Path, context: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        return run_workflow(path, context, **kwargs)

    return go


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
