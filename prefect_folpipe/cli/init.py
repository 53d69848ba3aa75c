"""``folpipe init``: scaffold a valid workflow folder (or a new task inside one).

Templates live in ``prefect_folpipe/cli/templates/<name>/``. Two placeholders are filled in:
``__NAME__`` (the workflow name, from the folder) and ``__SCHEMA__`` (the relative path from each
``task.yaml`` to the workflow's ``task.schema.json``, which ``init`` writes for editors).
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import click
from rich.text import Text

from ..workflow import task_yaml_json_schema
from ._render import EXIT_USAGE, dump_json, get_console

WORKFLOW_TEMPLATES = ("minimal", "pipeline", "loop")
TASK_TEMPLATE = "task"
SCHEMA_FILE = "task.schema.json"
GITIGNORE = ".folpipe/\n"
_NUMERIC_PREFIX = re.compile(r"^\d+_")


def template_root(template: str) -> Traversable:
    """The packaged folder of one template."""
    return resources.files("prefect_folpipe.cli").joinpath("templates", template)


def template_files(template: str) -> dict[str, str]:
    """``{relative posix path: text}`` of every file of a template."""
    files: dict[str, str] = {}

    def collect(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda item: item.name):
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                collect(child, rel + "/")
            elif not child.name.endswith((".pyc", ".pyo")):
                files[rel] = child.read_text(encoding="utf-8")

    collect(template_root(template), "")
    return files


def workflow_name(folder: Path) -> str:
    """A task name from a folder name (the numeric ``N_`` prefix removed, as discovery does)."""
    name = folder.resolve().name
    return _NUMERIC_PREFIX.sub("", name) or name


def enclosing_workflow_root(folder: Path) -> Path | None:
    """For ``.../subtasks/<new task>``: the root of the workflow around it, else ``None``."""
    current = folder
    root = None
    while current.parent.name == "subtasks":
        root = current.parent.parent
        current = root
    return root


def schema_reference(file_dir: Path, schema_file: Path) -> str:
    """Path of ``schema_file`` relative to ``file_dir`` (what the YAML modeline needs)."""
    return Path(os.path.relpath(schema_file, file_dir)).as_posix()


def render_template(text: str, *, name: str, schema: str) -> str:
    """Fill the ``__NAME__`` and ``__SCHEMA__`` placeholders of one template file."""
    return text.replace("__NAME__", json.dumps(name)).replace("__SCHEMA__", schema)


def check_target(target: Path) -> str | None:
    """Why ``target`` cannot be scaffolded into, or ``None`` when it can."""
    if target.exists() and not target.is_dir():
        return f"{target} exists and is not a folder"
    if target.is_dir() and any(target.iterdir()):
        shown = ", ".join(sorted(entry.name for entry in target.iterdir())[:5])
        return f"{target} is not empty (it holds {shown}); pick a new folder or empty this one"
    return None


def scaffold(target: Path, template: str) -> list[Path]:
    """Write ``template`` into ``target`` (must be absent or empty); returns the files written."""
    problem = check_target(target)
    if problem:
        raise FileExistsError(problem)
    workflow_root = target if template in WORKFLOW_TEMPLATES else enclosing_workflow_root(target)
    schema_file = (workflow_root or target) / SCHEMA_FILE
    keep_modeline = template in WORKFLOW_TEMPLATES or schema_file.exists()
    written: list[Path] = []
    for rel, text in template_files(template).items():
        destination = target / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        schema = schema_reference(destination.parent, schema_file)
        content = render_template(text, name=workflow_name(target), schema=schema)
        if not keep_modeline:
            content = _drop_modeline(content)
        destination.write_text(content, encoding="utf-8")
        written.append(destination)
    if template in WORKFLOW_TEMPLATES:
        written.append(_write(target / SCHEMA_FILE, dump_json(task_yaml_json_schema()) + "\n"))
        written.append(_write(target / ".gitignore", GITIGNORE))
    return written


def _drop_modeline(content: str) -> str:
    lines = content.splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("# yaml-language-server:"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _next_steps(target: Path, template: str) -> Text:
    shown = os.path.relpath(target) if not target.is_absolute() else str(target)
    what = "new task" if template == TASK_TEMPLATE else f"{template} workflow"
    text = Text(f"✓ created a {what} in {shown}\n", style="bold green")
    if template == TASK_TEMPLATE:
        text.append("edit its instructions.md and task.yaml, then run `folpipe validate` on ")
        text.append("the workflow folder.")
        return text
    text.append("next:\n")
    text.append(f"  folpipe validate {shown}\n")
    text.append(f"  folpipe tree {shown}\n")
    text.append(f"  folpipe run {shown}      # offline: answers come from replies.yaml")
    return text


@click.command(name="init")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--template",
    "-t",
    type=click.Choice([*WORKFLOW_TEMPLATES, TASK_TEMPLATE]),
    default=None,
    help=(
        "minimal: one task; pipeline: sequential + parallel children with outputs and tools; "
        "loop: a generate/review loop; task: a new child task. Default: task when PATH is "
        "inside a subtasks/ folder, else minimal."
    ),
)
def command(path: Path, template: str | None) -> None:
    """Scaffold a new workflow folder at PATH that validates and runs offline."""
    if template is None:
        template = TASK_TEMPLATE if path.parent.name == "subtasks" else "minimal"
    try:
        scaffold(path, template)
    except FileExistsError as exc:
        get_console(stderr=True).print(Text(f"error: {exc}", style="bold red"))
        raise click.exceptions.Exit(EXIT_USAGE) from None
    get_console().print(_next_steps(path, template))
