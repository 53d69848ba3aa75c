"""Prefect-free views of a loaded workflow: the JSON tree, a text graph and a Mermaid chart.

``folpipe tree`` and ``folpipe graph`` print these; they read only the ``spec`` tree, so they
stay fast and never import Prefect.
"""

from __future__ import annotations

import graphlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .workflow.tree import Task, ToolSpec, Workflow

ROOT_LABEL = "root"


@dataclass(frozen=True)
class TreeEntry:
    """A child as shown in a view: the task and whether it (or an ancestor) is disabled."""

    task: Task
    enabled: bool


def child_entries(task: Task, *, enabled: bool = True) -> list[TreeEntry]:
    """Enabled children in run order, then disabled ones (sorted like discovery would)."""
    live = [TreeEntry(child, enabled) for child in task.children]
    off = sorted(task.disabled_children, key=lambda child: (child.priority, child.folder.name))
    return live + [TreeEntry(child, False) for child in off]


def is_branch(task: Task) -> bool:
    """Whether the task has children, enabled or not."""
    return bool(task.children or task.disabled_children)


def execution_label(task: Task) -> str | None:
    """The execution type of a branch (``None`` for a leaf, including a task whose children
    are all disabled: it runs none, so it runs as a leaf)."""
    return task.execution_type if task.children else None


# --------------------------------------------------------------------------- tree (JSON)


def task_to_dict(task: Task, *, enabled: bool = True) -> dict[str, Any]:
    """One ``folpipe tree --json`` node (ARCHITECTURE §3), children included."""
    provider = task.provider
    return {
        "name": task.name,
        "path": task.path,
        "kind": task.kind,
        "execution_type": execution_label(task),
        "priority": task.priority,
        "enabled": enabled and task.config.enabled,
        "settings": task.settings.as_dict(),
        "provider": provider.name if provider else None,
        "model": provider.model if provider else None,
        "tools": [tool.name for tool in task.tools],
        "children": [
            task_to_dict(entry.task, enabled=entry.enabled and enabled)
            for entry in child_entries(task)
        ],
    }


def workflow_to_dict(workflow: Workflow) -> dict[str, Any]:
    """The whole resolved tree as nested ``folpipe tree --json`` nodes."""
    return task_to_dict(workflow.root)


def tool_origin(tool: ToolSpec, *, root_name: str = ROOT_LABEL) -> str:
    """Where a task got a tool from: ``own``, ``shared`` or ``inherited from <ancestor>``."""
    if tool.origin == "own":
        return "own"
    if tool.origin == "shared":
        return "from shared/tools.md"
    return f"inherited from {tool.owner or root_name}"


# --------------------------------------------------------------------------- text graph


def loop_bounds(task: Task) -> str:
    """``until ... · max N iterations · ...`` for a loop branch ('' for anything else)."""
    sub = task.config.subtasks
    if sub is None or sub.execution_type != "loop":
        return ""
    parts = [f"until {condition_text(sub.until)}" if sub.until is not None else "no until"]
    if sub.max_iterations is not None:
        parts.append(f"max {sub.max_iterations} iterations")
    else:
        parts.append("no max_iterations")
    if sub.iteration_timeout is not None:
        parts.append(f"{sub.iteration_timeout:g}s per iteration")
    parts.append(f"on max: {sub.on_max_iterations}")
    return " · ".join(parts)


def condition_text(condition: str | dict[str, Any] | None) -> str:
    """A skip_if / until condition as one line (structured forms in a compact notation)."""
    if condition is None:
        return ""
    if isinstance(condition, str):
        return " ".join(condition.split())
    return _structured_condition_text(condition)


def _structured_condition_text(condition: dict[str, Any]) -> str:
    for combinator in ("all", "any"):
        if combinator in condition and isinstance(condition[combinator], list):
            inner = ", ".join(condition_text(item) for item in condition[combinator])
            return f"{combinator}({inner})"
    key = condition.get("key", "?")
    for operator, value in condition.items():
        if operator == "key":
            continue
        if operator in ("exists", "not_exists"):
            return f"{key} {operator}"
        return f"{key} {operator} {value!r}"
    return str(key)


def branch_summary(task: Task) -> str:
    """How a branch runs its children, in a few words."""
    kind = execution_label(task)
    if kind is None:
        return ""
    parts = [kind]
    if kind == "loop":
        parts.append(loop_bounds(task))
    workers = task.settings.parallel_workers
    if kind in ("parallel", "graph", "priority_groups") and workers:
        parts.append(f"max {workers} at once")
    if task.on_error != "fail":
        parts.append(f"on_error: {task.on_error}")
    if task.kind == "both":
        parts.append("agent: first + final pass")
    return " · ".join(parts)


def task_notes(task: Task, enabled: bool) -> list[str]:
    """Short annotations shown after a task's name in the text graph."""
    notes = []
    if not enabled:
        notes.append("disabled")
    if task.config.depends_on:
        notes.append("after " + ", ".join(task.config.depends_on))
    if task.config.conditions.skip_if is not None:
        notes.append(f"skip if {condition_text(task.config.conditions.skip_if)}")
    if task.config.on_failure != "fail":
        notes.append(f"on_failure: {task.config.on_failure}")
    return notes


def dependency_stages(task: Task) -> dict[str, int]:
    """For a ``graph`` branch: child name -> stage (1 = no dependencies); {} on a cycle."""
    names = {child.name for child in task.children}
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for child in task.children:
        sorter.add(child.name, *(dep for dep in child.config.depends_on if dep in names))
    stages: dict[str, int] = {}
    try:
        sorter.prepare()
    except graphlib.CycleError:
        return {}
    level = 0
    while sorter.is_active():
        ready = sorter.get_ready()
        level += 1
        for name in ready:
            stages[name] = level
        sorter.done(*ready)
    return stages


def _child_prefix(parent: Task, entry: TreeEntry, index: int, stages: dict[str, int]) -> str:
    if not entry.enabled:
        return ""
    kind = parent.execution_type
    if kind in ("sequential", "loop"):
        return f"{index}. "
    if kind == "priority_groups":
        return f"[group {entry.task.priority}] "
    if kind == "graph" and entry.task.name in stages:
        return f"[stage {stages[entry.task.name]}] "
    return ""


def _graph_line(task: Task, prefix: str, enabled: bool) -> str:
    label = f"{prefix}{task.name}"
    summary = branch_summary(task)
    if summary:
        label += f"  ({summary})"
    notes = task_notes(task, enabled)
    if notes:
        label += "  [" + "; ".join(notes) + "]"
    return label


def _graph_lines(task: Task, enabled: bool, indent: str) -> Iterator[str]:
    entries = child_entries(task, enabled=enabled)
    stages = dependency_stages(task) if task.execution_type == "graph" else {}
    for index, entry in enumerate(entries, start=1):
        last = index == len(entries)
        branch, carry = ("└── ", "    ") if last else ("├── ", "│   ")
        prefix = _child_prefix(task, entry, index, stages)
        yield indent + branch + _graph_line(entry.task, prefix, entry.enabled)
        yield from _graph_lines(entry.task, entry.enabled, indent + carry)


def to_text_graph(workflow: Workflow) -> str:
    """The task tree as box-drawing text: execution types, order, dependencies, loop bounds."""
    root = workflow.root
    head = _graph_line(root, "", root.config.enabled)
    return "\n".join([head, *_graph_lines(root, root.config.enabled, "")]) + "\n"


# --------------------------------------------------------------------------- Mermaid


_MERMAID_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;"}


def mermaid_text(text: str) -> str:
    """Text made safe inside a quoted Mermaid label."""
    return "".join(_MERMAID_ESCAPES.get(char, char) for char in text)


class _MermaidWriter:
    """Builds a ``flowchart TD``: one subgraph per branch, edges for order and dependencies."""

    def __init__(self) -> None:
        self.lines: list[str] = ["flowchart TD"]
        self.edges: list[str] = []
        self.disabled: list[str] = []
        self.ids: dict[int, str] = {}

    def node_id(self, task: Task) -> str:
        key = id(task)
        if key not in self.ids:
            self.ids[key] = f"t{len(self.ids)}"
        return self.ids[key]

    def add(self, task: Task, enabled: bool, depth: int, title: str) -> None:
        pad = "    " * depth
        node = self.node_id(task)
        if not enabled:
            self.disabled.append(node)
        notes = task_notes(task, enabled)
        if not is_branch(task):
            label = title + ("<br/>" + mermaid_text("; ".join(notes)) if notes else "")
            self.lines.append(f'{pad}{node}["{label}"]')
            return
        summary = branch_summary(task)
        label = title + ("<br/>" + mermaid_text(summary) if summary else "")
        self.lines.append(f'{pad}subgraph {node}["{label}"]')
        self.lines.append(f"{pad}    direction TB")
        entries = child_entries(task, enabled=enabled)
        for entry in entries:
            self.add(entry.task, entry.enabled, depth + 1, mermaid_text(entry.task.name))
        self.lines.append(f"{pad}end")
        self.add_edges(task, [entry.task for entry in entries if entry.enabled])

    def add_edges(self, task: Task, children: list[Task]) -> None:
        for edge in branch_edges(task, children):
            source, target = self.node_id(edge.source), self.node_id(edge.target)
            if edge.kind == "next_iteration":
                self.edges.append(f'{source} -.->|"{mermaid_text(edge.label)}"| {target}')
            else:
                self.edges.append(f"{source} --> {target}")

    def render(self) -> str:
        lines = self.lines + [f"    {edge}" for edge in self.edges]
        if self.disabled:
            lines.append("    classDef disabled stroke-dasharray: 5 5,color:#999")
            lines.append(f"    class {','.join(self.disabled)} disabled")
        return "\n".join(lines) + "\n"


EdgeKind = Literal["order", "depends_on", "group", "next_iteration"]


@dataclass(frozen=True)
class Edge:
    """``target`` starts after ``source`` (``next_iteration``: the loop goes round again)."""

    source: Task
    target: Task
    kind: EdgeKind
    label: str = ""


def branch_edges(task: Task, children: list[Task]) -> list[Edge]:
    """The edges between a branch's enabled ``children`` implied by its execution type."""
    kind = task.execution_type
    edges: list[Edge] = []
    if kind in ("sequential", "loop"):
        edges.extend(Edge(a, b, "order") for a, b in itertools.pairwise(children))
    if kind == "loop" and children:
        sub = task.config.subtasks
        bound = f"max {sub.max_iterations}" if sub and sub.max_iterations else "unbounded"
        edges.append(Edge(children[-1], children[0], "next_iteration", f"next iteration ({bound})"))
    if kind == "graph":
        by_name = {child.name: child for child in children}
        for child in children:
            edges.extend(
                Edge(by_name[dep], child, "depends_on")
                for dep in child.config.depends_on
                if dep in by_name
            )
    if kind == "priority_groups":
        edges.extend(_group_edges(children))
    return edges


def _group_edges(children: list[Task]) -> Iterator[Edge]:
    groups: dict[int, list[Task]] = {}
    for child in children:
        groups.setdefault(child.priority, []).append(child)
    ordered = [groups[key] for key in sorted(groups)]
    for before, after in itertools.pairwise(ordered):
        for a in before:
            for b in after:
                yield Edge(a, b, "group")


def graph_to_dict(workflow: Workflow) -> dict[str, Any]:
    """``folpipe graph --json``: ``{"nodes": [...], "edges": [...]}`` keyed by task path."""
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []

    def visit(task: Task, parent: str | None, enabled: bool) -> None:
        entries = child_entries(task, enabled=enabled)
        nodes.append(
            {
                "path": task.path,
                "name": task.name,
                "parent": parent,
                "kind": task.kind,
                "execution_type": execution_label(task),
                "enabled": enabled,
                "summary": branch_summary(task),
                "notes": task_notes(task, enabled),
            }
        )
        for edge in branch_edges(task, [entry.task for entry in entries if entry.enabled]):
            edges.append(
                {
                    "from": edge.source.path,
                    "to": edge.target.path,
                    "kind": edge.kind,
                    "label": edge.label or None,
                }
            )
        for entry in entries:
            visit(entry.task, task.path, entry.enabled)

    root = workflow.root
    visit(root, None, root.config.enabled)
    return {"nodes": nodes, "edges": edges}


def to_mermaid(workflow: Workflow) -> str:
    """The task tree as a Mermaid ``flowchart TD`` for docs and pull requests."""
    writer = _MermaidWriter()
    root = workflow.root
    writer.add(root, root.config.enabled, 1, mermaid_text(root.name))
    return writer.render()


# --------------------------------------------------------------------------- tool visibility


@dataclass(frozen=True)
class ToolVisibility:
    """Whether one task gets a tool, and why (or why not)."""

    task: Task
    enabled: bool
    visible: bool
    reason: str


def tool_declarations(workflow: Workflow) -> dict[str, list[str]]:
    """Every declared tool name -> the labels of the tasks declaring it (and shared/tools.md)."""
    declared: dict[str, list[str]] = {}
    for tool in workflow.shared_tools:
        declared.setdefault(tool.name, []).append("shared/tools.md")

    def visit(task: Task) -> None:
        for tool in task.own_tools:
            declared.setdefault(tool.name, []).append(_label(task, workflow.root.name))
        for child in (*task.children, *task.disabled_children):
            visit(child)

    visit(workflow.root)
    return declared


def explain_tool(workflow: Workflow, name: str) -> list[ToolVisibility]:
    """For every task (root first, disabled ones included): does it get tool ``name``, and why.

    The answer (visible or not) is the loader's resolved tool set; the reason for a missing tool
    names the scoping rule of spec §2.10 that filtered it out.
    """
    shared = {tool.name for tool in workflow.shared_tools}
    declared_by = tool_declarations(workflow).get(name, [])
    rows: list[ToolVisibility] = []

    def visit(task: Task, lineage: list[Task], enabled: bool) -> None:
        found = next((tool for tool in task.tools if tool.name == name), None)
        if found is not None:
            reason = tool_origin(found, root_name=workflow.root.name)
            rows.append(ToolVisibility(task, enabled, True, reason))
        else:
            reason = _missing_reason(task, lineage, name, name in shared, workflow.root.name)
            if not reason:
                reason = f"declared only by {', '.join(declared_by)}, not an ancestor"
            rows.append(ToolVisibility(task, enabled, False, reason))
        for entry in child_entries(task, enabled=enabled):
            visit(entry.task, [*lineage, task], entry.enabled)

    visit(workflow.root, [], workflow.root.config.enabled)
    return rows


def _label(task: Task, root_name: str) -> str:
    return task.path or root_name


def _missing_reason(
    task: Task, lineage: list[Task], name: str, in_shared: bool, root_name: str
) -> str:
    declarers = [
        (index, ancestor)
        for index, ancestor in enumerate(lineage)
        if any(tool.name == name for tool in ancestor.own_tools)
    ]
    reasons = [
        _blocked_reason(task, lineage, index, ancestor, name, root_name)
        for index, ancestor in reversed(declarers)
    ]
    if in_shared and name not in task.config.tools.use_shared:
        reasons.append("it is in shared/tools.md: add it to tools.use_shared")
    return "; ".join(reasons)


def _blocked_reason(
    task: Task, lineage: list[Task], index: int, ancestor: Task, name: str, root_name: str
) -> str:
    where = _label(ancestor, root_name)
    config = task.config
    tool = next(tool for tool in ancestor.own_tools if tool.name == name)
    distance = len(lineage) - index
    blockers = [b for b in lineage[index:] if name in b.config.block_tools]
    if tool.scope == "local":
        return f"{where} declares it with scope: local"
    if config.inherit_tools is False:
        return f"inherit_tools: false (declared by {where})"
    if config.inherit_tools_depth != -1 and distance > config.inherit_tools_depth:
        return (
            f"{where} is {distance} levels up but inherit_tools_depth is "
            f"{config.inherit_tools_depth}"
        )
    if blockers:
        return f"blocked by {_label(blockers[-1], root_name)} (block_tools)"
    if isinstance(config.inherit_tools, list) and name not in config.inherit_tools:
        return f"not in this task's inherit_tools list (declared by {where})"
    if name in config.exclude_tools:
        return f"listed in this task's exclude_tools (declared by {where})"
    return f"declared by {where} but filtered out"
