"""``folpipe validate``: check a workflow folder and list every problem in one pass.

Exit code 0 when there is no error (warnings allowed unless ``--strict``), 1 otherwise; a
missing path is a usage error (2). Never imports Prefect, and never runs the workflow's code
(tool signatures are read from the source) unless ``--import-tools`` asks it to.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import Diagnostic
from ..workflow.tree import Workflow
from ._render import (
    EXIT_FAILED,
    diagnostics_payload,
    get_console,
    handle_errors,
    print_diagnostics,
    print_json,
    split_diagnostics,
    summary_text,
)


def is_ok(diagnostics: list[Diagnostic], *, strict: bool = False) -> bool:
    """No errors (and, with ``strict``, no warnings either)."""
    errors, warnings = split_diagnostics(diagnostics)
    return not errors and not (strict and warnings)


@click.command(name="validate")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help='Print {"ok", "errors", "warnings"} JSON.')
@click.option("--strict", is_flag=True, help="Treat warnings as errors (exit 1 on any).")
@click.option(
    "--import-tools",
    is_flag=True,
    help="Also import the tool code (tools.md python blocks, tools/*.py) as a run does. "
    "Without it nothing of the workflow runs: safe on an untrusted folder.",
)
def command(path: Path, as_json: bool, strict: bool, import_tools: bool) -> None:
    """Check the workflow folder PATH and list every problem, with file, line and hint."""
    from ..validate import check, internal_error

    workflow = None
    with handle_errors(json_output=as_json, root=path, validation_exit_code=EXIT_FAILED):
        try:
            # no content hashes: nothing here uses them, and they read every data file
            loaded, diagnostics = check(path, import_tools=import_tools, content_hashes=False)
            workflow = loaded.workflow
        except Exception as exc:  # the validator reports, it does not crash (FP190)
            diagnostics = [internal_error(exc)]
    ok = is_ok(diagnostics, strict=strict)
    if as_json:
        payload = diagnostics_payload(diagnostics)
        payload["ok"] = ok
        print_json(payload)
    else:
        console = get_console()
        print_diagnostics(diagnostics, console, root=path)
        console.print(summary_text(diagnostics, str(path)))
        if ok and workflow is not None:
            console.print(checkpoint_note(workflow), style="dim", soft_wrap=True)
    if not ok:
        raise click.exceptions.Exit(EXIT_FAILED)


def checkpoint_note(workflow: Workflow) -> str:
    """How far the workflow's checkpoints reach (local runs, deployments, schedules): the
    choice ``settings.cache`` makes, said once after a clean validation."""
    from ..plan import describe

    return describe(workflow.root.settings)
