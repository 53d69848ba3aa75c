"""``folpipe resume PATH``: finish the latest run of a workflow that did not complete.

Every run records itself as it starts and again as it ends (``.folpipe/runs/``), so a run that
failed, was interrupted (SIGINT, SIGTERM) or crashed with its process (SIGKILL, OOM) is on
record. ``resume`` takes the latest of them that was not completed since, says which one it
took, and runs it again with that run's own context and provider override: every task whose
checkpoint is still valid is reused (reported ``cached``), so only what did not finish runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from ._render import get_console, handle_errors
from .run import execute, load, run_options


def describe(record: dict[str, Any]) -> str:
    """One line naming the run ``resume`` took and what did not finish in it."""
    done = ("completed", "cached", "skipped")
    unfinished = [
        t["path"] for t in record.get("tasks", []) if t.get("path") and t.get("status") not in done
    ]
    when = record.get("started_at") or record.get("finished_at") or "?"
    line = (
        f"resuming run {record.get('flow_run_id') or Path(record['file']).stem} "
        f"(started {when}, {record.get('status')})"
    )
    if record.get("error"):
        line += f": {record['error']}"
    listed = ", ".join(unfinished) or ("-" if record.get("tasks") else "not recorded")
    return f"{line}; not finished: {listed}"


@click.command(name="resume")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def command(path: Path, as_json: bool) -> None:
    """Finish the latest run of the workflow at PATH that did not complete (failed,
    interrupted or crashed), reusing its checkpoints."""
    from ..compile.runs import resumable_run

    with handle_errors(json_output=as_json, root=path):
        workflow = load(path)
        record = resumable_run(workflow.root_dir)
        if record is None:
            raise ConfigError(
                f"nothing to resume: every recorded run of {path} completed (or none is recorded)",
                code="FP404",
                hint="run it with `folpipe run PATH`; resume finishes a run that failed, was "
                "interrupted or crashed",
            )
    # --json keeps stdout for the one document: the choice is said on stderr
    get_console(stderr=as_json).print(describe(record), highlight=False, soft_wrap=True)
    replies = Path(record["replies"]) if record.get("replies") else None
    options = run_options(record.get("provider"), replies, fresh=False)
    options.resumed_from = Path(record["file"]).name
    raise click.exceptions.Exit(execute(workflow, record.get("context") or {}, options, as_json))
