"""The three-task chain the ``--from`` / record / diff tests share: research -> draft -> publish."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        target.write_text(text, encoding="utf-8")
    return root


def chain(root: Path, *, tool: bool = False, safe: bool = False) -> Path:
    """A sequential chain on the scripted provider; with ``tool``, research calls a python
    tool ``lookup`` first (``replay: safe`` with ``safe``)."""
    research: list[Any] = ["notes about {topic}"]
    files: dict[str, Any] = {
        "task.yaml": {
            "name": "chain",
            "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
            "subtasks": {"execution_type": "sequential"},
            "context": {"topic": "agents"},
        },
        "subtasks/10_research/instructions.md": "Research {topic}.",
        "subtasks/20_draft/instructions.md": "Draft a post from the research.",
        "subtasks/30_publish/instructions.md": "Publish the draft.",
    }
    if tool:
        research = [{"tool_calls": [{"name": "lookup", "arguments": {"q": "agents"}}]}, "found it"]
        files["subtasks/10_research/tools/lookup.py"] = (
            "from prefect_folpipe import tool\n\n\n"
            + ('@tool(replay="safe")\n' if safe else "@tool\n")
            + "def lookup(q: str) -> str:\n"
            '    """Look a term up."""\n'
            '    return f"definition of {q}"\n'
        )
    files["replies.yaml"] = {
        "tasks": {"research": research, "draft": ["a draft"], "publish": ["published"]},
        "default": "ok",
    }
    return write(root, files)
