"""Fixtures for the folpipe 0.1.8 compatibility tests: folders from dicts, real Prefect runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow


@pytest.fixture
def make_workflow(tmp_path: Path) -> Callable[..., Path]:
    """``make_workflow(files, name=None)``: a workflow folder (scripted provider by default)."""
    counter = iter(range(1000))

    def make(files: Mapping[str, Any], name: str | None = None) -> Path:
        return write_workflow(tmp_path / (name or f"wf{next(counter)}"), files)

    return make


@pytest.fixture
def run(prefect_harness: str) -> Callable[..., Any]:
    """``run(path, context=None, **options)`` -> RunResult (real Prefect, session harness)."""
    from prefect_folpipe.compile import run_workflow

    def go(path: Path, context: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        return run_workflow(path, context, fresh=True, **kwargs)

    return go


def codes(diagnostics: Any) -> list[str]:
    """The codes of a list of diagnostics."""
    return [d.code for d in diagnostics]
