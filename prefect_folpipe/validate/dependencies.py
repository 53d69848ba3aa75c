"""`depends_on`: only between siblings of a `graph` group, no unknown names, no cycles."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity, suggest
from ..loader import LoadResult
from ..workflow.graph import simple_cycles
from ..workflow.tree import Task
from ._common import at, siblings


def check_dependencies(result: LoadResult) -> Iterator[Diagnostic]:
    """FP140 unknown sibling; FP141 depends_on outside a graph group; FP142 cycles;
    FP144 dependency on a disabled sibling (warning)."""
    assert result.workflow is not None
    root = result.workflow.root
    if root.config.depends_on:
        yield at(
            result,
            root,
            "FP141",
            "the workflow root has no siblings to depend on",
            ("depends_on",),
            "remove depends_on from the root task.yaml",
        )
    for parent in result.all_tasks():
        group = siblings(parent)
        if any(child.config.depends_on for child in group):
            yield from _check_group(result, parent, group)


def _check_group(result: LoadResult, parent: Task, group: tuple[Task, ...]) -> Iterator[Diagnostic]:
    enabled = {child.name for child in parent.children}
    disabled = {child.name for child in parent.disabled_children}
    edges: list[tuple[str, str]] = []
    for child in group:
        if not child.config.depends_on:
            continue
        if parent.execution_type != "graph":
            yield at(
                result,
                child,
                "FP141",
                "depends_on applies only when the parent runs its "
                f"subtasks as a graph (it runs them {parent.execution_type})",
                ("depends_on",),
                "set `subtasks: {execution_type: graph}` in "
                + (f"{parent.rel_dir}/task.yaml" if parent.rel_dir else "the root task.yaml"),
            )
            continue
        for index, name in enumerate(child.config.depends_on):
            loc = ("depends_on", index)
            if name in enabled and child.name in enabled:
                edges.append((name, child.name))
            elif name in disabled:
                yield at(
                    result,
                    child,
                    "FP144",
                    f"depends on disabled subtask {name!r}; the dependency is ignored",
                    loc,
                    "enable it, or remove the dependency",
                    Severity.WARNING,
                )
            elif name not in enabled:
                yield _unknown(result, child, group, name, loc)
    yield from _cycles(result, parent, edges)


def _unknown(
    result: LoadResult, child: Task, group: tuple[Task, ...], name: str, loc: tuple[str, int]
) -> Diagnostic:
    by_folder = {sibling.folder.name: sibling.name for sibling in group}
    if name in by_folder:
        hint = f"refer to the sibling by its name {by_folder[name]!r}, not its folder name"
    else:
        close = suggest(name, sorted(sibling.name for sibling in group))
        names = ", ".join(sorted(s.name for s in group if s is not child)) or "none"
        hint = f"did you mean {close!r}?" if close else f"siblings: {names}"
    return at(result, child, "FP140", f"depends_on names unknown sibling {name!r}", loc, hint)


def _cycles(result: LoadResult, parent: Task, edges: list[tuple[str, str]]) -> Iterator[Diagnostic]:
    """FP142 for each elementary cycle (at most 10), at the entry that closes it."""
    if not edges:
        return
    upstreams: dict[str, list[str]] = {child.name: [] for child in parent.children}
    for before, after in edges:
        upstreams[after].append(before)
    by_name = {child.name: child for child in parent.children}
    for chain in simple_cycles(upstreams):
        task = by_name[chain[0]]
        yield at(
            result,
            task,
            "FP142",
            f"dependency cycle: {' -> '.join(chain)}",
            ("depends_on", _index_of(task, chain[1])),
            "remove one depends_on entry of the cycle",
        )


def _index_of(task: Task, name: str) -> int:
    try:
        return task.config.depends_on.index(name)
    except ValueError:
        return 0
