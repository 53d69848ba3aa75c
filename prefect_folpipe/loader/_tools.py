"""Calls into the tools package (its seams are in docs/internals.md), imported lazily."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import Diagnostic
from ..spec.config import TaskConfig
from ..spec.tree import ToolSpec

Lineage = Sequence[tuple[str, TaskConfig, tuple[ToolSpec, ...]]]


def own_tools(
    folder: Path, entries: frozenset[str], path: str
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """A task's tools.md + tools/*.py (skipped cheaply when it has neither)."""
    if "tools.md" not in entries and "tools" not in entries:
        return (), []
    from ..tools.discovery import discover_tools

    tools, diagnostics = discover_tools(folder, owner=path)
    return tuple(tools), list(diagnostics)


def shared_tools(root: Path) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """``shared/tools.md`` of the workflow, if there is one."""
    file = root / "shared" / "tools.md"
    if not file.is_file():
        return (), []
    from ..tools.discovery import parse_tools_md

    tools, diagnostics = parse_tools_md(file, owner="<shared>")
    return tuple(tools), list(diagnostics)


def resolved_tools(
    lineage: Lineage, shared: tuple[ToolSpec, ...]
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """The task's tool set after inheritance and scoping (spec §2.10)."""
    if (
        not shared
        and not any(tools for _, _, tools in lineage)
        and not _names_tools(lineage[-1][1])
    ):
        return (), []
    from ..tools.inheritance import resolve_tools

    tools, diagnostics = resolve_tools(list(lineage), shared)
    return tuple(tools), list(diagnostics)


def _names_tools(config: TaskConfig) -> bool:
    """Whether the task's config mentions tools (then unknown names must be reported)."""
    return bool(
        config.tools.use_shared
        or config.exclude_tools
        or config.block_tools
        or isinstance(config.inherit_tools, list)
    )


def hooks(folder: Path, entries: frozenset[str]) -> dict[str, Path]:
    """``pre_run`` / ``post_run`` hook files of a task."""
    if "hooks" not in entries:
        return {}
    from ..tools.hooks import discover_hooks

    return dict(discover_hooks(folder))
