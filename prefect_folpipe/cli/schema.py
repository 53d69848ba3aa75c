"""``folpipe schema``: print (or write) the JSON Schema of task.yaml for editors."""

from __future__ import annotations

from pathlib import Path

import click

from ..workflow import task_yaml_json_schema
from ._render import dump_json


@click.command(name="schema")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write the schema to this file instead of stdout.",
)
def command(output: Path | None) -> None:
    """Print the JSON Schema of task.yaml (point your editor's YAML support at it)."""
    text = dump_json(task_yaml_json_schema())
    if output is None:
        click.echo(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text + "\n", encoding="utf-8")
    click.echo(f"wrote {output}", err=True)
