"""Helpers for translator tests: write workflow folders from dicts, run them under the harness."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

SCRIPTED = {"default": "scripted", "scripted": {"replies": "replies.yaml"}}


def write_workflow(root: Path, files: Mapping[str, Any]) -> Path:
    """Create a workflow folder: ``{relative path: text or dict (written as YAML)}``.

    The root task.yaml gets the scripted provider (replies.yaml) unless it names providers.
    """
    root.mkdir(parents=True, exist_ok=True)
    files = dict(files)
    root_yaml = dict(files.pop("task.yaml", {}) or {})
    root_yaml.setdefault("providers", SCRIPTED)
    files["task.yaml"] = root_yaml
    replies = files.get("replies.yaml", {})
    if isinstance(replies, dict):
        files["replies.yaml"] = {"default": "ok", **replies}
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        target.write_text(text, encoding="utf-8")
    return root


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
