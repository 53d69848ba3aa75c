"""Tool inheritance and scoping (docs/tools.md): which tools one task can use.

For the task at the end of ``lineage`` (root first):

1. its **own** tools (tools.md + tools/);
2. **shared** tools named in ``tools.use_shared`` (unknown name: error FP220);
3. **inherited** tools, walking ancestors nearest first, at most ``inherit_tools_depth`` levels
   (``-1`` = all, ``1`` = parent only), from each ancestor's *own* tools:
   * tools with ``scope: local`` are skipped;
   * a tool named in the ``block_tools`` of the ancestor that owns it, or of any ancestor
     between that one and this task, is skipped (a task's ``block_tools`` keeps the tool for
     itself and hides it, and what it inherited, from its descendants);
   * the nearest ancestor wins a name clash;
   then ``inherit_tools: false`` drops them all, an ``inherit_tools`` list keeps only the
   named ones and ``exclude_tools`` removes the named ones;
4. merge: own > shared > inherited.

An ancestor's ``inherit_tools`` / ``exclude_tools`` / ``inherit_tools_depth`` shape only that
ancestor's own tool set; what reaches a descendant is controlled by ``scope: local`` and
``block_tools``. Shared tools are not inherited: each task that wants one lists it in
``use_shared``. Unknown names in ``inherit_tools`` / ``exclude_tools`` / ``block_tools`` are
warnings (FP221-FP223) with a did-you-mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..errors import Diagnostic, Severity, did_you_mean
from ..workflow.config import TaskConfig
from ..workflow.tree import ToolSpec

SHARED_OWNER = "<shared>"

LineageEntry = tuple[str, TaskConfig, Sequence[ToolSpec]]


def resolve_tools(
    lineage: Sequence[LineageEntry], shared: Iterable[ToolSpec]
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """The resolved tool set of ``lineage[-1]``, with ``origin`` and ``owner`` set."""
    if not lineage:
        return (), []
    path, config, own_tools = lineage[-1]
    ancestors = list(reversed(lineage[:-1]))
    diagnostics: list[Diagnostic] = []
    own = [_mark(tool, "own", path) for tool in own_tools]
    shared_tools = _shared(config, path, {tool.name: tool for tool in shared}, diagnostics)
    candidates = _inheritable(ancestors)
    inherited = _inherited(config, ancestors)
    _warn_unknown(path, config, own, shared_tools, candidates, diagnostics)
    merged: dict[str, ToolSpec] = {}
    for tool in [*own, *shared_tools, *inherited]:
        merged.setdefault(tool.name, tool)
    return tuple(merged.values()), diagnostics


_MARKED: dict[tuple[int, str, str], tuple[ToolSpec, ToolSpec]] = {}
"""``_mark``'s copies by (tool, origin, owner): an ancestor's tool reaches each of its
descendants as the same frozen copy (the key's tool is kept, so its id stays its own)."""
MARKED_LIMIT = 20_000


def _mark(tool: ToolSpec, origin: str, owner: str) -> ToolSpec:
    if tool.origin == origin and tool.owner == owner:
        return tool
    key = (id(tool), origin, owner)
    kept = _MARKED.get(key)
    if kept is not None and kept[0] is tool:
        return kept[1]
    if len(_MARKED) >= MARKED_LIMIT:
        _MARKED.clear()
    marked = dataclasses.replace(tool, origin=origin, owner=owner)  # type: ignore[arg-type]
    _MARKED[key] = (tool, marked)
    return marked


def _shared(
    config: TaskConfig, path: str, shared: dict[str, ToolSpec], diagnostics: list[Diagnostic]
) -> list[ToolSpec]:
    tools = []
    for name in config.tools.use_shared:
        tool = shared.get(name)
        if tool is None:
            diagnostics.append(
                Diagnostic(
                    code="FP220",
                    message=f"tools.use_shared: unknown shared tool {name!r}",
                    task=path,
                    hint=did_you_mean(name, shared)
                    or _known("shared tools (shared/tools.md)", shared),
                )
            )
            continue
        tools.append(_mark(tool, "shared", SHARED_OWNER))
    return tools


def _known(what: str, names: Iterable[str]) -> str:
    listed = ", ".join(sorted(names))
    return f"known {what}: {listed}" if listed else f"there are no {what}"


def _inherited(config: TaskConfig, ancestors: list[LineageEntry]) -> list[ToolSpec]:
    """Tools reaching this task from its ancestors (nearest first), after every scoping rule."""
    found: dict[str, ToolSpec] = {}
    for offer in _offers(config, ancestors):
        if offer.reason is None and offer.tool.name not in found:
            found[offer.tool.name] = _mark(offer.tool, "inherited", offer.owner)
    return list(found.values())


@dataclasses.dataclass(frozen=True)
class _Offer:
    """An ancestor's own tool as one task sees it: who owns it and why it does not reach the
    task (``reason`` is a template over ``{where}`` and ``{blocker}``; ``None``: it does)."""

    tool: ToolSpec
    owner: str
    blocker: str | None
    reason: str | None


def _offers(config: TaskConfig, ancestors: list[LineageEntry]) -> Iterator[_Offer]:
    """Every ancestor's own tool, nearest ancestor first (the nearest wins a name clash)."""
    blockers: dict[str, str] = {}
    for distance, (owner, owner_config, owner_tools) in enumerate(ancestors, start=1):
        for name in owner_config.block_tools:
            blockers.setdefault(name, owner)  # the owner's own block_tools count too
        for tool in owner_tools:
            blocker = blockers.get(tool.name)
            yield _Offer(tool, owner, blocker, _reason(config, tool, distance, blocker))


def _reason(config: TaskConfig, tool: ToolSpec, distance: int, blocker: str | None) -> str | None:
    """Why an ancestor's tool ``distance`` levels up does not reach a task with ``config``."""
    if tool.scope == "local":
        return "{where} declares it with scope: local"
    if config.inherit_tools is False:
        return "inherit_tools: false (declared by {where})"
    depth = config.inherit_tools_depth
    if depth != -1 and distance > depth:
        return f"{{where}} is {distance} levels up but inherit_tools_depth is {depth}"
    if blocker is not None:
        return "blocked by {blocker} (block_tools)"
    if isinstance(config.inherit_tools, list) and tool.name not in config.inherit_tools:
        return "not in this task's inherit_tools list (declared by {where})"
    if tool.name in config.exclude_tools:
        return "listed in this task's exclude_tools (declared by {where})"
    return None


def missing_reasons(
    lineage: Sequence[LineageEntry], name: str, label: Callable[[str], str] = str
) -> list[str]:
    """Why tool ``name`` does not reach ``lineage[-1]`` from each ancestor declaring it, nearest
    first (``label`` turns a task path into the name shown, e.g. the root's name for ``""``)."""
    config, ancestors = lineage[-1][1], list(reversed(lineage[:-1]))
    return [
        (offer.reason or "declared by {where} but filtered out").format(
            where=label(offer.owner), blocker=label(offer.blocker or "")
        )
        for offer in _offers(config, ancestors)
        if offer.tool.name == name
    ]


def _inheritable(ancestors: list[LineageEntry]) -> set[str]:
    """Names any ancestor offers for inheritance (before depth and blocking)."""
    return {tool.name for _, _, tools in ancestors for tool in tools if tool.scope != "local"}


def _warn_unknown(
    path: str,
    config: TaskConfig,
    own: list[ToolSpec],
    shared_tools: list[ToolSpec],
    candidates: set[str],
    diagnostics: list[Diagnostic],
) -> None:
    """Warnings for names in inherit_tools / exclude_tools / block_tools that match nothing."""
    checks: list[tuple[str, str, list[str], set[str]]] = [
        ("FP221", "inherit_tools", _as_list(config.inherit_tools), candidates),
        ("FP222", "exclude_tools", list(config.exclude_tools), candidates),
        (
            "FP223",
            "block_tools",
            list(config.block_tools),
            candidates | {t.name for t in own} | {t.name for t in shared_tools},
        ),
    ]
    for code, key, names, known in checks:
        for name in names:
            if name in known:
                continue
            diagnostics.append(
                Diagnostic(
                    code=code,
                    message=f"{key}: no tool named {name!r} is available to this task",
                    task=path,
                    hint=did_you_mean(name, known) or _known("tools", known),
                    severity=Severity.WARNING,
                )
            )


def _as_list(value: bool | list[str]) -> list[str]:
    return value if isinstance(value, list) else []
