"""The benchmark workflow folders: a scripted provider answering every call after a fixed
``latency`` (seconds), so what is measured is orchestration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .trees import write_tree as _write


def _root(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
        **extra,
    }


def parallel_leaves(root: Path, count: int = 50, latency: float = 1.0) -> Path:
    """``count`` parallel leaves."""
    files: dict[str, Any] = {
        "task.yaml": _root("bench-parallel"),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for i in range(count):
        files[f"subtasks/leaf_{i:03d}/instructions.md"] = f"Leaf {i}."
    return _write(root, files)


def parallel_branches(
    root: Path, branches: int = 20, latency: float = 1.0, branch_as: str | None = None
) -> Path:
    """``branches`` parallel branches of 2 sequential leaves (``branch_as``: the setting)."""
    settings = {"branch_as": branch_as} if branch_as else {}
    files: dict[str, Any] = {
        "task.yaml": _root("bench-branches", settings=settings),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for b in range(branches):
        base = f"subtasks/branch_{b:02d}"
        files[f"{base}/task.yaml"] = {"subtasks": {"execution_type": "sequential"}}
        files[f"{base}/subtasks/10_first/instructions.md"] = "First."
        files[f"{base}/subtasks/20_second/instructions.md"] = "Second."
    return _write(root, files)


def sequential_chain(root: Path, count: int = 200, latency: float = 0.0) -> Path:
    """A ``count``-task sequential chain."""
    files: dict[str, Any] = {
        "task.yaml": _root("bench-chain", subtasks={"execution_type": "sequential"}),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for i in range(count):
        files[f"subtasks/{i:03d}_step/task.yaml"] = {"name": f"step_{i:03d}"}
        files[f"subtasks/{i:03d}_step/instructions.md"] = f"Step {i}."
    return _write(root, files)


def one_task(root: Path, latency: float = 0.0) -> Path:
    """A one-task workflow (the root is the only task)."""
    files = {
        "task.yaml": _root("bench-one"),
        "replies.yaml": {"default": "ok", "latency_s": latency},
        "instructions.md": "Say ok.",
    }
    return _write(root, files)
