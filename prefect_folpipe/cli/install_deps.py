"""``folpipe install-deps``: install every task's ``dependencies:``.

Collected from every enabled task in the tree, deduplicated, installed into the interpreter
running folpipe with ``uv pip install`` when uv is available, ``pip install`` otherwise.
"""

from __future__ import annotations

import shlex

import click

from .._process.wording import plural
from ._render import get_console, handle_errors, print_json


@click.command(name="install-deps")
@click.argument("path")
@click.option("--dry-run", is_flag=True, help="Print the install command without running it.")
@click.option("--json", "as_json", is_flag=True, help='Print {"packages", "command", "ran"}.')
def command(path: str, dry_run: bool, as_json: bool) -> None:
    """Install the dependencies declared by the tasks of the workflow folder PATH."""
    from ..deploy.dependencies import collect_dependencies, install, install_command
    from ..deploy.options import load

    with handle_errors(json_output=as_json):
        packages = collect_dependencies(load(path, import_tools=False))
        command_line = install_command(packages) if packages else []
        if packages and not dry_run:
            install(packages)
    if as_json:
        ran = bool(packages) and not dry_run
        print_json({"packages": packages, "command": command_line, "ran": ran})
        return
    console = get_console()
    if not packages:
        console.print("no dependencies declared")
        return
    text = shlex.join(command_line)
    console.print(
        text if dry_run else f"[green]✓[/] installed {plural(len(packages), 'package')}: {text}"
    )
