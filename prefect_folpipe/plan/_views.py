"""Views of a plan (Prefect-free): the ``folpipe tree`` JSON, a text graph, a Mermaid chart.

Order, waves, stages and edges come from the ``Plan``; only labels (names, conditions, notes)
are read from the tasks, so every view draws what the run does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..workflow.tree import Task, ToolSpec
from .execution import condition_text, execution_type

if TYPE_CHECKING:
    from ._nodes import NodePlan
    from ._plan import Plan

ROOT_LABEL = "root"


# --------------------------------------------------------------------------- tree (JSON)


def tree_to_dict(plan: Plan, path: str = "") -> dict[str, Any]:
    """One ``folpipe tree --json`` node (docs/cli.md), children included."""
    node = plan.node(path)
    task = plan.task(path)
    provider = task.provider
    return {
        "name": task.name,
        "path": task.path,
        "kind": task.kind,
        "execution_type": node.execution_type,
        "priority": task.priority,
        "enabled": node.enabled,
        "settings": task.settings.as_dict(),
        "provider": provider.name if provider else None,
        "model": provider.model if provider else None,
        "tools": [tool.name for tool in task.tools],
        "children": [tree_to_dict(plan, child) for child in node.all_children],
    }


def tool_origin(tool: ToolSpec, *, root_name: str = ROOT_LABEL) -> str:
    """Where a task got a tool from: ``own``, ``shared`` or ``inherited from <ancestor>``."""
    if tool.origin == "own":
        return "own"
    if tool.origin == "shared":
        return "from shared/tools.md"
    return f"inherited from {tool.owner or root_name}"


# --------------------------------------------------------------------------- labels


def branch_summary(node: NodePlan) -> str:
    """How a branch runs its children, in a few words."""
    kind = node.execution_type
    if kind is None:
        return ""
    parts = [kind, *execution_type(kind).summary(node)]
    if execution_type(kind).concurrent and node.parallel_workers:
        parts.append(f"max {node.parallel_workers} at once")
    if node.on_error != "fail":
        parts.append(f"on_error: {node.on_error}")
    if node.kind == "both":
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


# --------------------------------------------------------------------------- text graph


def _child_prefix(plan: Plan, parent: NodePlan, child: NodePlan, index: int) -> str:
    if not child.enabled or parent.execution_type is None:
        return ""
    return execution_type(parent.execution_type).child_prefix(plan, parent, child, index)


def _graph_line(plan: Plan, node: NodePlan, prefix: str) -> str:
    label = f"{prefix}{node.name}"
    summary = branch_summary(node)
    if summary:
        label += f"  ({summary})"
    notes = task_notes(plan.task(node.path), node.enabled)
    if notes:
        label += "  [" + "; ".join(notes) + "]"
    return label


def _graph_lines(plan: Plan, node: NodePlan, indent: str) -> Iterator[str]:
    children = [plan.node(path) for path in node.all_children]
    for index, child in enumerate(children, start=1):
        last = index == len(children)
        branch, carry = ("└── ", "    ") if last else ("├── ", "│   ")
        prefix = _child_prefix(plan, node, child, index)
        yield indent + branch + _graph_line(plan, child, prefix)
        yield from _graph_lines(plan, child, indent + carry)


def plan_to_text(plan: Plan) -> str:
    """The task tree as box-drawing text: execution types, order, dependencies, loop bounds."""
    head = _graph_line(plan, plan.root, "")
    return "\n".join([head, *_graph_lines(plan, plan.root, "")]) + "\n"


# --------------------------------------------------------------------------- graph (JSON)


def graph_to_dict(plan: Plan) -> dict[str, Any]:
    """``folpipe graph --json``: ``{"nodes": [...], "edges": [...]}`` keyed by task path."""
    nodes: list[dict[str, Any]] = []

    def visit(node: NodePlan, parent: str | None) -> None:
        nodes.append(
            {
                "path": node.path,
                "name": node.name,
                "parent": parent,
                "kind": node.kind,
                "execution_type": node.execution_type,
                "enabled": node.enabled,
                "summary": branch_summary(node),
                "notes": task_notes(plan.task(node.path), node.enabled),
            }
        )
        for child in node.all_children:
            visit(plan.node(child), node.path)

    visit(plan.root, None)
    return {"nodes": nodes, "edges": [edge.to_dict() for edge in plan.edges()]}


# --------------------------------------------------------------------------- Mermaid


_MERMAID_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;"}


def mermaid_text(text: str) -> str:
    """Text made safe inside a quoted Mermaid label."""
    return "".join(_MERMAID_ESCAPES.get(char, char) for char in text)


class _MermaidWriter:
    """Builds a ``flowchart TD``: one subgraph per branch, edges for order and dependencies."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.lines: list[str] = ["flowchart TD"]
        self.edges: list[str] = []
        self.disabled: list[str] = []
        self.ids: dict[str, str] = {}

    def node_id(self, path: str) -> str:
        if path not in self.ids:
            self.ids[path] = f"t{len(self.ids)}"
        return self.ids[path]

    def add(self, node: NodePlan, depth: int) -> None:
        pad = "    " * depth
        ident = self.node_id(node.path)
        title = mermaid_text(node.name)
        if not node.enabled:
            self.disabled.append(ident)
        if not node.all_children:
            notes = task_notes(self.plan.task(node.path), node.enabled)
            label = title + ("<br/>" + mermaid_text("; ".join(notes)) if notes else "")
            self.lines.append(f'{pad}{ident}["{label}"]')
            return
        summary = branch_summary(node)
        label = title + ("<br/>" + mermaid_text(summary) if summary else "")
        self.lines.append(f'{pad}subgraph {ident}["{label}"]')
        self.lines.append(f"{pad}    direction TB")
        for child in node.all_children:
            self.add(self.plan.node(child), depth + 1)
        self.lines.append(f"{pad}end")
        for edge in node.edges:
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


def plan_to_mermaid(plan: Plan) -> str:
    """The task tree as a Mermaid ``flowchart TD`` for docs and pull requests."""
    writer = _MermaidWriter(plan)
    writer.add(plan.root, 1)
    return writer.render()
