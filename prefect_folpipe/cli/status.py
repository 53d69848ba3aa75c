"""``folpipe status``: recent runs of a workflow (state, duration, how its tasks ended, cost).

Reads the Prefect API: the server of ``PREFECT_API_URL``, or the local ephemeral history.
"""

from __future__ import annotations

import asyncio

import click
from rich.table import Table

from ._render import get_console, handle_errors, print_json


@click.command(name="status")
@click.argument("path")
@click.option("--limit", "-l", default=10, show_default=True, help="How many runs to show.")
@click.option("--json", "as_json", is_flag=True, help='Print {"workflow", "runs": [...]}.')
def command(path: str, limit: int, as_json: bool) -> None:
    """List the recent runs of the workflow folder PATH, newest first: its tasks counted as the
    run summary counts them (one per task, the root included)."""
    from ..deploy.options import load
    from ..deploy.status import recent_runs

    with handle_errors(json_output=as_json):
        workflow = load(path, import_tools=False)  # reads, never runs, its code
        runs = asyncio.run(recent_runs(workflow, limit=limit))
    if as_json:
        payload = {
            "workflow": workflow.name,
            "path": str(workflow.root_dir),
            "runs": [run.to_dict() for run in runs],
        }
        print_json(payload)
        return
    console = get_console()
    if not runs:
        console.print(f"no runs of {workflow.name} yet")
        return
    table = Table(title=f"Recent runs of {workflow.name}", title_justify="left")
    notes = any(run.message for run in runs)
    answered = any(run.approvals for run in runs)
    skipped = any(run.tasks.skipped for run in runs)
    columns = ("flow run", "state", "started", "duration", "tasks", "ran", "cached", "failed")
    columns += ("skipped",) if skipped else ()
    extra = ("cost",) + (("why",) if notes else ()) + (("approvals",) if answered else ())
    for column in (*columns, *extra):
        table.add_column(column, overflow="fold")
    for run in runs:
        duration = f"{run.duration_s:.1f}s" if run.duration_s is not None else ""
        style = {"COMPLETED": "green", "FAILED": "red", "CRASHED": "red"}.get(run.state_type, "")
        table.add_row(
            run.name,
            f"[{style}]{run.state}[/]" if style else run.state,
            (run.start_time or "")[:19].replace("T", " "),
            duration,
            str(run.tasks.total),
            str(run.tasks.completed),
            str(run.tasks.cached),
            str(run.tasks.failed),
            *([str(run.tasks.skipped)] if skipped else []),
            f"${run.cost_usd:.4f}" if run.cost_usd is not None else "",
            *([_why(run.message)] if notes else []),
            *(["\n".join(run.approvals)] if answered else []),
        )
    console.print(table)


def _why(message: str | None, limit: int = 120) -> str:
    """A failed or crashed run's state message, on one line."""
    text = " ".join((message or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
