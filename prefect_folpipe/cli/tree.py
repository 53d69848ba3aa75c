"""``folpipe tree``: the resolved task tree, with settings, provider and tools per task.

It answers "why can't my task see this tool?": every tool a task gets is listed with where it
comes from (its own, ``use_shared``, or inherited from which ancestor). An invalid workflow
prints its diagnostics and exits 1, like ``folpipe validate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from ..render import child_entries, execution_label, tool_origin, workflow_to_dict
from ..spec.tree import EffectiveSettings, Task, Workflow
from ._render import EXIT_FAILED, get_console, handle_errors, print_diagnostics, print_json

_DEFAULT_SETTINGS = EffectiveSettings().as_dict()


def changed_settings(task: Task, *, full: bool = False) -> dict[str, Any]:
    """The task's effective settings that differ from the defaults (all of them with ``full``)."""
    settings = task.settings.as_dict()
    if full:
        return settings
    return {key: value for key, value in settings.items() if value != _DEFAULT_SETTINGS.get(key)}


def _headline(task: Task, enabled: bool) -> Text:
    text = Text(task.name, style="bold" if enabled else "dim strike")
    facts = [task.kind]
    kind = execution_label(task)
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


def _settings_line(task: Task, full: bool) -> Text | None:
    settings = changed_settings(task, full=full)
    if not settings:
        return None
    text = Text("settings: ", style="dim")
    text.append(", ".join(f"{key}={value}" for key, value in settings.items()))
    return text


def task_label(task: Task, *, enabled: bool, root_name: str, full: bool = False) -> Text:
    """The multi-line label of one task in the human tree."""
    lines = [_headline(task, enabled)]
    if task.config.description:
        lines.append(Text(task.config.description, style="italic"))
    lines.append(_tools_line(task, root_name))
    settings = _settings_line(task, full)
    if settings is not None:
        lines.append(settings)
    return Text("\n").join(lines)


def build_tree(workflow: Workflow, *, full: bool = False) -> Tree:
    """A rich Tree of the workflow: one multi-line label per task, disabled ones included."""
    root = workflow.root
    tree = Tree(task_label(root, enabled=root.config.enabled, root_name=root.name, full=full))

    def add(branch: Tree, task: Task, enabled: bool) -> None:
        for entry in child_entries(task, enabled=enabled):
            label = task_label(entry.task, enabled=entry.enabled, root_name=root.name, full=full)
            add(branch.add(label), entry.task, entry.enabled)

    add(tree, root, root.config.enabled)
    return tree


def print_tree(workflow: Workflow, console: Console, *, full: bool = False) -> None:
    """The human view: the tree, then any warnings found while loading."""
    console.print(build_tree(workflow, full=full))
    if workflow.warnings:
        console.print()
        print_diagnostics(workflow.warnings, console, root=workflow.root_dir)


@click.command(name="tree")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the tree as nested JSON nodes.")
@click.option(
    "--all-settings", "full", is_flag=True, help="Show every effective setting, not only changes."
)
def command(path: Path, as_json: bool, full: bool) -> None:
    """Show the resolved task tree of PATH: kinds, settings, providers and each task's tools."""
    from ..loader import load_workflow

    with handle_errors(json_output=as_json, root=path, validation_exit_code=EXIT_FAILED):
        workflow = load_workflow(path)
    if as_json:
        print_json(workflow_to_dict(workflow))
        return
    print_tree(workflow, get_console(), full=full)
