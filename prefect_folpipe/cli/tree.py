"""``folpipe tree``: the resolved task tree, with settings, provider and tools per task.

It answers "why can't my task see this tool?": every tool a task gets is listed with where it
comes from (its own, ``use_shared``, or inherited from which ancestor). An invalid workflow
prints its diagnostics and exits 1, like ``folpipe validate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..errors import did_you_mean
from ..loader.inheritance import missing_reasons
from ..plan import Plan, build_plan, tool_origin, tree_to_dict
from ..workflow.tree import EffectiveSettings, Task, Workflow
from ._render import EXIT_FAILED, get_console, handle_errors, print_diagnostics, print_json

_DEFAULT_SETTINGS = EffectiveSettings().as_dict()


def changed_settings(
    task: Task, parent: Task | None = None, *, full: bool = False
) -> dict[str, Any]:
    """Effective settings worth showing: every one with ``full``; else those that differ from
    the parent's (for the root: from the defaults), i.e. what this task's config changes."""
    settings = task.settings.as_dict()
    if full:
        return settings
    base = parent.settings.as_dict() if parent is not None else _DEFAULT_SETTINGS
    return {key: value for key, value in settings.items() if value != base.get(key)}


def _headline(task: Task, enabled: bool, kind: str | None) -> Text:
    text = Text(task.name, style="bold" if enabled else "dim strike")
    facts = [task.kind]
    if kind:
        facts.append(kind)
    facts.append(f"priority {task.priority}")
    if task.provider is not None:
        model = task.provider.model
        facts.append(f"{task.provider.name} ({model})" if model else task.provider.name)
    elif task.runs_agent:
        facts.append("no provider")
    text.append("  " + " · ".join(facts), style="dim")
    if not enabled:
        text.append("  disabled", style="bold red")
    return text


def _tools_line(task: Task, root_name: str) -> Text:
    text = Text("tools: ", style="dim")
    if not task.tools:
        text.append("none", style="dim")
        return text
    for index, tool in enumerate(task.tools):
        if index:
            text.append(", ")
        text.append(tool.name, style="cyan")
        text.append(f" ({tool_origin(tool, root_name=root_name)})", style="dim")
    return text


def _settings_line(task: Task, parent: Task | None, full: bool) -> Text | None:
    settings = changed_settings(task, parent, full=full)
    if not settings:
        return None
    text = Text("settings: " if full or parent is None else "overrides: ", style="dim")
    text.append(", ".join(f"{key}={value}" for key, value in settings.items()))
    return text


def task_label(
    task: Task,
    *,
    enabled: bool,
    root_name: str,
    parent: Task | None = None,
    full: bool = False,
    execution_type: str | None = None,
) -> Text:
    """The multi-line label of one task in the human tree (``execution_type``: the plan's,
    for a branch)."""
    lines = [_headline(task, enabled, execution_type)]
    if task.config.description:
        lines.append(Text(task.config.description, style="italic"))
    lines.append(_tools_line(task, root_name))
    settings = _settings_line(task, parent, full)
    if settings is not None:
        lines.append(settings)
    return Text("\n").join(lines)


def build_tree(workflow: Workflow, *, full: bool = False, plan: Plan | None = None) -> Tree:
    """A rich Tree of the workflow: one multi-line label per task, disabled ones included."""
    plan = plan or build_plan(workflow)
    root = workflow.root

    def label(path: str, parent: Task | None) -> Text:
        node = plan.node(path)
        return task_label(
            plan.task(path),
            enabled=node.enabled,
            root_name=root.name,
            parent=parent,
            full=full,
            execution_type=node.execution_type,
        )

    tree = Tree(label("", None))

    def add(branch: Tree, task: Task) -> None:
        for path in plan.node(task.path).all_children:
            add(branch.add(label(path, task)), plan.task(path))

    add(tree, root)
    return tree


def print_tree(workflow: Workflow, console: Console, *, full: bool = False) -> None:
    """The human view: the tree, then any warnings found while loading."""
    console.print(build_tree(workflow, full=full))
    if workflow.warnings:
        console.print()
        print_diagnostics(workflow.warnings, console, root=workflow.root_dir)


# --------------------------------------------------------------------------- --why TOOL


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
    names the scoping rule (docs/tools.md, "Which tools a task sees") that filtered it out.
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
        node = plan.node(task.path)
        for child in node.all_children:
            visit(plan.task(child), [*lineage, task], plan.node(child).enabled)

    plan = build_plan(workflow)
    visit(workflow.root, [], workflow.root.config.enabled)
    return rows


def _label(task: Task, root_name: str) -> str:
    return task.path or root_name


def _missing_reason(
    task: Task, lineage: list[Task], name: str, in_shared: bool, root_name: str
) -> str:
    """Why ``task`` does not get tool ``name``: the loader's scoping rule, per ancestor
    declaring it (nearest first), and a shared tool it does not ``use_shared``."""
    chain = [(node.path, node.config, node.own_tools) for node in (*lineage, task)]
    reasons = missing_reasons(chain, name, label=lambda path: path or root_name)
    if in_shared and name not in task.config.tools.use_shared:
        reasons.append("it is in shared/tools.md: add it to tools.use_shared")
    return "; ".join(reasons)


def check_tool_name(workflow: Workflow, tool_name: str) -> None:
    """A usage error (exit 2) when no task and no shared/tools.md declares ``tool_name``."""
    declared = tool_declarations(workflow)
    if tool_name in declared:
        return
    close = did_you_mean(tool_name, declared)
    hint = f" ({close})" if close else ""
    known = ", ".join(sorted(declared)) or "none"
    raise click.BadParameter(
        f"no task declares a tool named {tool_name!r}{hint}; declared tools: {known}",
        param_hint="--why",
    )


def why_table(workflow: Workflow, tool_name: str) -> Table:
    """One row per task: does it get ``tool_name``, and why (or which rule filtered it out)."""
    table = Table(title=f"who gets {tool_name!r}", title_justify="left")
    table.add_column("task", overflow="fold")
    table.add_column("gets it", no_wrap=True)
    table.add_column("why", ratio=1)
    for row in explain_tool(workflow, tool_name):
        name = Text(row.task.path or row.task.name, style="" if row.enabled else "dim strike")
        mark = Text("yes", style="green") if row.visible else Text("no", style="red")
        table.add_row(name, mark, Text(row.reason + ("" if row.enabled else " (disabled)")))
    return table


def why_payload(workflow: Workflow, tool_name: str) -> list[dict[str, Any]]:
    """``--why TOOL --json``: ``[{"path", "name", "enabled", "visible", "reason"}, ...]``."""
    return [
        {
            "path": row.task.path,
            "name": row.task.name,
            "enabled": row.enabled,
            "visible": row.visible,
            "reason": row.reason,
        }
        for row in explain_tool(workflow, tool_name)
    ]


@click.command(name="tree")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the tree as nested JSON nodes.")
@click.option(
    "--all-settings", "full", is_flag=True, help="Show every effective setting, not only changes."
)
@click.option(
    "--why",
    "tool_name",
    metavar="TOOL",
    default=None,
    help="Explain, for every task, whether it gets TOOL and which rule filtered it out.",
)
def command(path: Path, as_json: bool, full: bool, tool_name: str | None) -> None:
    """Show the resolved task tree of PATH: kinds, settings, providers and each task's tools."""
    from ..validate import load_workflow

    with handle_errors(json_output=as_json, root=path, validation_exit_code=EXIT_FAILED):
        workflow = load_workflow(path, import_tools=False)  # reads, never runs, tool code
    if tool_name is not None:
        check_tool_name(workflow, tool_name)
        if as_json:
            print_json(why_payload(workflow, tool_name))
        else:
            get_console().print(why_table(workflow, tool_name))
        return
    if as_json:
        print_json(tree_to_dict(build_plan(workflow)))
        return
    print_tree(workflow, get_console(), full=full)
