"""``folpipe convert task-to-skill|skill-to-task PATH [--apply] [--recursive]``.

folpipe 0.1.8's ``convert``, made lossless (``loader.convert``): without ``--apply`` it prints
what it would write (``--- DRY RUN: <file> ---`` and the content); with ``--apply`` it writes
the new files and removes the old ones (a SKILL.md next to task.yaml would be ignored).
``--recursive`` converts every task folder of the tree, PATH included. Never imports Prefect.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import yaml

from ..loader.convert import ConvertError, TaskFiles, default_name, skill_to_task, task_to_skill
from ._render import handle_errors

TASK_YAML, INSTRUCTIONS, SKILL, SUBTASKS = "task.yaml", "instructions.md", "SKILL.md", "subtasks"


@click.command(name="convert")
@click.argument("direction", type=click.Choice(["task-to-skill", "skill-to-task"]))
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--apply", "apply", is_flag=True, help="Write the files (default: a dry run).")
@click.option("--recursive", is_flag=True, help="Convert every task folder below PATH too.")
@click.option("--clean", is_flag=True, hidden=True, help="Accepted for folpipe 0.1.8 (implied).")
def command(direction: str, path: Path, apply: bool, recursive: bool, clean: bool) -> None:
    """Convert task.yaml + instructions.md to SKILL.md, or back (losslessly)."""
    to_skill = direction == "task-to-skill"
    with handle_errors(root=path):
        folders = list(_folders(path, recursive))
        todo = [f for f in folders if _convertible(f, to_skill)]
        if not todo:
            what = "task.yaml / instructions.md" if to_skill else "SKILL.md"
            raise ConvertError(
                f"no folder to convert: none holds {what}"
                + ("" if to_skill else " without task.yaml / instructions.md"),
                hint="check the direction and PATH (--recursive converts the whole tree)",
            )
        for folder in todo:
            writes, removes = _plan(folder, to_skill)
            for file, text in writes.items():
                if apply:
                    with open(file, "w", encoding="utf-8", newline="") as handle:
                        handle.write(text)
                    click.echo(f"wrote {file}")
                else:
                    click.echo(f"--- DRY RUN: {file} ---")
                    click.echo(text, nl=not text.endswith("\n"))
            for file in removes:
                if apply:
                    file.unlink()
                    click.echo(f"removed {file}")
                else:
                    click.echo(f"--- DRY RUN: would remove {file} ---")
    if not apply:
        click.echo("(dry run: nothing written; add --apply)")


def _folders(path: Path, recursive: bool) -> Iterator[Path]:
    """PATH, then (``recursive``) every folder under a ``subtasks/``, depth first."""
    yield path
    if not recursive:
        return
    subtasks = path / SUBTASKS
    if subtasks.is_dir():
        for child in sorted(subtasks.iterdir()):
            if child.is_dir() and not child.name.startswith((".", "__")):
                yield from _folders(child, recursive)


def _convertible(folder: Path, to_skill: bool) -> bool:
    has_task = (folder / TASK_YAML).is_file() or (folder / INSTRUCTIONS).is_file()
    has_skill = (folder / SKILL).is_file()
    if to_skill and has_task and has_skill:
        raise ConvertError(
            f"{folder} holds both SKILL.md and task.yaml / instructions.md",
            hint="remove the one that is out of date, then convert",
        )
    return has_task if to_skill else has_skill and not has_task


def _plan(folder: Path, to_skill: bool) -> tuple[dict[Path, str], list[Path]]:
    """Files to write (path -> text) and files to remove for one folder."""
    if to_skill:
        files = TaskFiles(_read(folder / TASK_YAML), _read(folder / INSTRUCTIONS))
        text = task_to_skill(files, _task_name(folder, files))
        removes = [folder / n for n in (TASK_YAML, INSTRUCTIONS) if (folder / n).is_file()]
        return {folder / SKILL: text}, removes
    converted = skill_to_task(_read(folder / SKILL) or "")
    writes = {}
    if converted.task_yaml is not None:
        writes[folder / TASK_YAML] = converted.task_yaml
    if converted.instructions is not None:
        writes[folder / INSTRUCTIONS] = converted.instructions
    if not writes:
        writes[folder / TASK_YAML] = ""  # keep the folder a task
    return writes, [folder / SKILL]


def _task_name(folder: Path, files: TaskFiles) -> str:
    """The name the loader gives the task (``name:``, else the folder without ``N_``)."""
    try:
        data = yaml.safe_load(files.task_yaml or "") or {}
    except yaml.YAMLError as exc:
        raise ConvertError(f"{folder / TASK_YAML} is not valid YAML: {exc}") from None
    name = data.get("name") if isinstance(data, dict) else None
    if isinstance(name, str) and name:
        return name
    return default_name(folder.name)


def _read(file: Path) -> str | None:
    if not file.is_file():
        return None
    try:
        with open(file, encoding="utf-8", newline="") as handle:  # line endings kept as is
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"cannot read {file}: {exc}", hint="save it as UTF-8 text") from None
