"""``folpipe graph``: draw the task tree with execution types, dependencies and loop bounds.

Text by default (for terminals), ``--mermaid`` for docs and pull requests, ``--json`` (nodes
and edges) for tools; all three draw the run's ``Plan``. An invalid workflow prints its
diagnostics and exits 1. Never imports Prefect.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..plan import build_plan, graph_to_dict
from ._render import EXIT_FAILED, handle_errors, print_json


@click.command(name="graph")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--mermaid", is_flag=True, help="Print a Mermaid flowchart instead of text.")
@click.option("--json", "as_json", is_flag=True, help='Print {"nodes", "edges"} JSON.')
def command(path: Path, mermaid: bool, as_json: bool) -> None:
    """Draw the task tree of PATH: execution types, depends_on edges and loop bounds."""
    from ..validate import load_workflow

    with handle_errors(json_output=as_json, root=path, validation_exit_code=EXIT_FAILED):
        workflow = load_workflow(path, import_tools=False)  # reads, never runs, tool code
    plan = build_plan(workflow)
    if as_json:
        print_json(graph_to_dict(plan))
        return
    click.echo(plan.to_mermaid() if mermaid else plan.to_text(), nl=False)
