"""A task's tools and hooks: its own, the shared ones, and what it inherits."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import Diagnostic
from ..workflow.config import HttpHook, TaskConfig
from ..workflow.tree import ToolSpec
from ._yaml import SourceMap
from .hooks import discover_hooks
from .inheritance import resolve_tools
from .tools import diagnostic, discover_module_tools, discover_tools, mentions_tool, parse_tools_md

Lineage = Sequence[tuple[str, TaskConfig, tuple[ToolSpec, ...]]]


def own_tools(
    folder: Path,
    entries: frozenset[str],
    path: str,
    *,
    import_tools: bool = True,
    blobs: dict[str, bytes] | None = None,
    files: frozenset[str] | None = None,
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """A task's tools.md + tools/*.py, and beside a SKILL.md its scripts/*.py (the Agent
    Skills folder for code; a name tools.md or tools/ defines wins). Their code is only read,
    not run, unless ``import_tools``. ``files``: the names in ``entries`` that are files
    (``None``: not known, looked up)."""
    tools: list[ToolSpec] = []
    diagnostics: list[Diagnostic] = []
    if "tools.md" in entries or "tools" in entries:
        found, problems = discover_tools(
            folder,
            owner=path,
            import_tools=import_tools,
            blobs=blobs,
            has_tools_md=None if files is None else "tools.md" in files,
            has_tools_dir="tools" in entries,
        )
        tools, diagnostics = list(found), list(problems)
    if "scripts" in entries and "SKILL.md" in entries:
        found, problems = discover_module_tools(
            folder / "scripts", owner=path, quiet=True, import_tools=import_tools
        )
        names = {spec.name for spec in tools}
        tools += [spec for spec in found if spec.name not in names]
        diagnostics += problems
    elif "scripts" in entries:
        diagnostics += _unread_scripts(folder / "scripts", path)
    return tuple(tools), diagnostics


def _unread_scripts(scripts: Path, path: str) -> list[Diagnostic]:
    """FP171: ``@tool`` functions in scripts/ of a folder without SKILL.md are not loaded."""
    marked = [
        file
        for file in sorted(scripts.glob("*.py"))
        if not file.name.startswith("_") and mentions_tool(file)
    ]
    return [
        diagnostic(
            "FP171",
            f"scripts/{file.name} defines @tool functions, but scripts/ is read only beside a "
            "SKILL.md; they are not tools here",
            file,
            None,
            path,
            "move the module to tools/ (or make the folder a SKILL.md skill)",
            warning=True,
        )
        for file in marked
    ]


def shared_tools(
    root: Path, *, import_tools: bool = True, blobs: dict[str, bytes] | None = None
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """``shared/tools.md`` of the workflow, if there is one."""
    file = root / "shared" / "tools.md"
    if (blobs is None or str(file) not in blobs) and not file.is_file():
        return (), []  # (bytes in ``blobs``: read by this load's other build)
    tools, diagnostics = parse_tools_md(
        file, owner="<shared>", import_tools=import_tools, blobs=blobs
    )
    return tuple(tools), list(diagnostics)


def resolved_tools(
    lineage: Lineage, shared: tuple[ToolSpec, ...]
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """The task's tool set after inheritance and scoping (docs/tools.md)."""
    if (
        not shared
        and not any(tools for _, _, tools in lineage)
        and not _names_tools(lineage[-1][1])
    ):
        return (), []
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


def hooks(folder: Path, entries: frozenset[str], config: TaskConfig) -> dict[str, Path | HttpHook]:
    """``pre_run`` / ``post_run`` hooks of a task: its hook files, else task.yaml's http hooks
    (folpipe 0.1.8's order)."""
    found: dict[str, Path | HttpHook] = dict(discover_hooks(folder)) if "hooks" in entries else {}
    for stage in ("pre_run", "post_run"):
        http = getattr(config.hooks, stage, None) if config.hooks else None
        if http is not None:
            found.setdefault(stage, http)
    return found


_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "use_shared": ("tools", "use_shared"),
    "inherit_tools": ("inherit_tools",),
    "exclude_tools": ("exclude_tools",),
    "block_tools": ("block_tools",),
}


def locate(problem: Diagnostic, config: TaskConfig, source: SourceMap) -> Diagnostic:
    """Give a tool-resolution diagnostic (which names a task.yaml list) its file and line."""
    if problem.file is not None:
        return problem
    for word, loc in _LIST_KEYS.items():
        if word in problem.message:
            return replace(problem, file=source.file, line=source.line(_item(loc, problem, config)))
    return replace(problem, file=source.file)


def _item(loc: tuple[str, ...], problem: Diagnostic, config: TaskConfig) -> tuple[str | int, ...]:
    """``loc`` plus the index of the tool name the message quotes, when it is in the list."""
    names: object = config.model_dump(by_alias=False)
    for key in loc:
        names = names.get(key) if isinstance(names, dict) else None
    quoted = re.findall(r"'([^']+)'", problem.message)
    if isinstance(names, list) and quoted and quoted[-1] in names:
        return (*loc, names.index(quoted[-1]))
    return loc
