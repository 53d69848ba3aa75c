"""``folpipe resume PATH``: re-run the last failed run of a workflow from its checkpoints.

It repeats the recorded run's context and provider override; every task whose checkpoint is
still valid is reused (reported ``cached``), so only failed, skipped and changed tasks run.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import ConfigError
from ._render import get_console, handle_errors
from .run import execute, load, run_options


@click.command(name="resume")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def command(path: Path, as_json: bool) -> None:
    """Re-run the last failed run of the workflow at PATH, reusing its checkpoints."""
    from ..compile.runs import last_failed_run

    with handle_errors(json_output=as_json, root=path):
        workflow = load(path)
        record = last_failed_run(workflow.root_dir)
        if record is None:
            raise ConfigError(
                f"nothing to resume: the last recorded run of {path} did not fail",
                code="FP404",
                hint="run it with `folpipe run PATH`; resume only re-runs a failed run",
            )
    if not as_json:
        failed = [t["path"] or "(root)" for t in record.get("tasks", []) if t["status"] == "failed"]
        get_console().print(
            f"resuming run {record.get('flow_run_id')} ({record.get('finished_at')}); "
            f"failed before: {', '.join(failed) or '-'}"
        )
    replies = Path(record["replies"]) if record.get("replies") else None
    options = run_options(record.get("provider"), replies, fresh=bool(record.get("fresh")))
    options.lineage = record.get("lineage") or record.get("flow_run_id")
    options.across_runs = record.get("reuse_checkpoints")
    raise click.exceptions.Exit(execute(workflow, record.get("context") or {}, options, as_json))
