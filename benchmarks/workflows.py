"""Generate the benchmark workflow folders (scripted provider, fixed latency)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _write(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        target.write_text(text, encoding="utf-8")
    return root


def _root(name: str, latency: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
        **extra,
    }


def parallel_leaves(root: Path, count: int = 50, latency: float = 1.0) -> Path:
    """(1) ``count`` parallel leaves."""
    files: dict[str, Any] = {
        "task.yaml": _root("bench-parallel", latency),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for i in range(count):
        files[f"subtasks/leaf_{i:03d}/instructions.md"] = f"Leaf {i}."
    return _write(root, files)


def parallel_branches(
    root: Path, branches: int = 20, latency: float = 1.0, branch_as: str | None = None
) -> Path:
    """(2) ``branches`` parallel branches of 2 sequential leaves."""
    settings = {"branch_as": branch_as} if branch_as else {}
    files: dict[str, Any] = {
        "task.yaml": _root("bench-branches", latency, settings=settings),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for b in range(branches):
        base = f"subtasks/branch_{b:02d}"
        files[f"{base}/task.yaml"] = {"subtasks": {"execution_type": "sequential"}}
        files[f"{base}/subtasks/10_first/instructions.md"] = "First."
        files[f"{base}/subtasks/20_second/instructions.md"] = "Second."
    return _write(root, files)


def sequential_branches(
    root: Path, branches: int = 5, latency: float = 0.2, branch_as: str | None = None
) -> Path:
    """(6) ``branches`` branches one after another, 2 sequential leaves each: a branch that
    runs alone, where a subflow's cost is not multiplied by concurrent writes."""
    settings = {"branch_as": branch_as} if branch_as else {}
    files: dict[str, Any] = {
        "task.yaml": _root(
            "bench-sequential-branches",
            latency,
            settings=settings,
            subtasks={"execution_type": "sequential"},
        ),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for b in range(branches):
        base = f"subtasks/{b:02d}_branch"
        files[f"{base}/task.yaml"] = {"subtasks": {"execution_type": "sequential"}}
        files[f"{base}/subtasks/10_first/instructions.md"] = "First."
        files[f"{base}/subtasks/20_second/instructions.md"] = "Second."
    return _write(root, files)


def sequential_chain(root: Path, count: int = 200) -> Path:
    """(3) a ``count``-task sequential chain at zero latency."""
    files: dict[str, Any] = {
        "task.yaml": _root("bench-chain", 0.0, subtasks={"execution_type": "sequential"}),
        "replies.yaml": {"default": "ok"},
    }
    for i in range(count):
        files[f"subtasks/{i:03d}_step/task.yaml"] = {"name": f"step_{i:03d}"}
        files[f"subtasks/{i:03d}_step/instructions.md"] = f"Step {i}."
    return _write(root, files)


def failing_tail(root: Path, count: int = 10, fail: bool = True) -> Path:
    """(4) a sequential chain whose last task fails while ``fail`` (replies decide)."""
    files: dict[str, Any] = {
        "task.yaml": _root("bench-resume", 0.0, subtasks={"execution_type": "sequential"}),
        "replies.yaml": {
            "default": "ok",
            "tasks": {"last": [{"error": "auth"}] if fail else ["fixed"]},
        },
    }
    for i in range(count - 1):
        files[f"subtasks/{i:03d}_step/task.yaml"] = {"name": f"step_{i:03d}"}
        files[f"subtasks/{i:03d}_step/instructions.md"] = f"Step {i}."
    files[f"subtasks/{count:03d}_last/instructions.md"] = "The last step."
    return _write(root, files)


def one_task(root: Path) -> Path:
    """(5) a one-task workflow (the root is the only task)."""
    files = {
        "task.yaml": _root("bench-one", 0.0),
        "replies.yaml": {"default": "ok"},
        "instructions.md": "Say ok.",
    }
    return _write(root, files)


LONG_TOOL = """## fetch_page
Fetch one page of the report (5 KB of text).

```python
def fetch_page(n: int) -> str:
    return (f"page {n}: " + "lorem ipsum dolor sit amet " * 200)[:5000]
```
"""
ANSWER_CHARS = 3000


def long_conversation(root: Path, calls: int = 100, latency: float = 0.0) -> Path:
    """(6) one agent task making ``calls`` model calls: each answer (3 KB of text) asks for a
    tool whose output is 5 KB, so the conversation grows to ~200k tokens by the last call."""
    reasoning = ("thinking about the pages so far " * 100)[:ANSWER_CHARS]
    turns: list[Any] = [
        {"text": reasoning, "tool_calls": [{"name": "fetch_page", "arguments": {"n": i}}]}
        for i in range(calls - 1)
    ]
    files = {
        "task.yaml": _root("bench-journal", latency),
        "replies.yaml": {"latency_s": latency, "tasks": {"reader": [*turns, "Read every page."]}},
        "subtasks/reader/instructions.md": "Read every page of the report, one at a time.",
        "subtasks/reader/task.yaml": {"settings": {"max_turns": calls + 10}},
        "subtasks/reader/tools.md": LONG_TOOL,
    }
    return _write(root, files)
