"""``folpipe graph``: draw the task tree with execution types, dependencies and loop bounds.

Text by default (for terminals), ``--mermaid`` for docs and pull requests. An invalid workflow
prints its diagnostics and exits 1. Never imports Prefect.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..render import to_mermaid, to_text_graph
from ._render import EXIT_FAILED, handle_errors


@click.command(name="graph")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--mermaid", is_flag=True, help="Print a Mermaid flowchart instead of text.")
def command(path: Path, mermaid: bool) -> None:
    """Draw the task tree of PATH: execution types, depends_on edges and loop bounds."""
    from ..loader import load_workflow

    with handle_errors(root=path, validation_exit_code=EXIT_FAILED):
        workflow = load_workflow(path)
    click.echo(to_mermaid(workflow) if mermaid else to_text_graph(workflow), nl=False)
