"""``folpipe run-task PATH/TO/TASK``: run one task folder (and its subtree) in its workflow.

The workflow root is found by walking up through ``subtasks/`` folders; the task runs with the
root's ``context:`` plus ``--context``, as its own Prefect flow run.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import ConfigError
from ..workflow.tree import Task, Workflow
from ._render import handle_errors
from .run import execute, load, parse_context, run_options


def workflow_root(task_dir: Path) -> Path:
    """The outermost task folder above ``task_dir`` (climbing ``<parent>/subtasks/<task>``)."""
    current = task_dir.resolve()
    while current.parent.name == "subtasks" and current.parent.parent != current.parent:
        current = current.parent.parent
    return current


def find_task(workflow: Workflow, task_dir: Path) -> Task:
    wanted = task_dir.resolve()
    for task in workflow.tasks():
        if Path(task.folder).resolve() == wanted:
            return task
    raise ConfigError(
        f"{task_dir} is not an enabled task of the workflow at {workflow.root_dir}",
        code="FP403",
        hint="point at a task folder inside a workflow's subtasks/ tree (enabled: true)",
    )


@click.command(name="run-task")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--context", "context_arg", help="Context for the task: a JSON object or @file.")
@click.option("--provider", help="Override the task's provider (e.g. scripted).")
@click.option(
    "--replies", type=click.Path(dir_okay=False, path_type=Path), help="Scripted replies file."
)
@click.option("--fresh", is_flag=True, help="Ignore checkpoints.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def command(
    path: Path,
    context_arg: str | None,
    provider: str | None,
    replies: Path | None,
    fresh: bool,
    as_json: bool,
) -> None:
    """Run the task folder PATH in its workflow's context."""
    root = workflow_root(path)
    with handle_errors(json_output=as_json, root=root):
        context = parse_context(context_arg)
        workflow = load(root)
        task = find_task(workflow, path)
    options = run_options(provider, replies, fresh)
    options.only = task.path
    options.keep_run_record = False
    raise click.exceptions.Exit(execute(workflow, context, options, as_json))
