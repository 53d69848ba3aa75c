"""``folpipe plan PATH``: what a run would do, without calling a model.

The tasks in execution order (wave numbers: ``2.1`` is the first wave inside the second wave
of the root), which would come from a checkpoint and, for the others, why not; which
``skip_if`` would skip them; a cost preview flagged against budgets. It reads the same
``Plan`` as the run (``compile.preview``). Exit 0 (1 when an estimate exceeds a budget), 2 for
an invalid workflow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from .._process.wording import plural
from ._render import EXIT_FAILED, get_console, handle_errors, print_json

STATUS_STYLE = {"checkpoint": "green", "runs": "yellow", "skipped": "dim", "maybe skipped": "cyan"}


@click.command(name="plan")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--context", "context_arg", help="Initial context: a JSON object or @file.")
@click.option("--provider", help="The provider override the run would use (e.g. scripted).")
@click.option("--replies", type=click.Path(dir_okay=False, path_type=Path), help="Replies file.")
@click.option("--fresh", is_flag=True, help="Plan a run that ignores checkpoints.")
@click.option("--from", "rerun_from", multiple=True, metavar="TASK", help="Plan a run --from TASK.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def command(
    path: Path,
    context_arg: str | None,
    provider: str | None,
    replies: Path | None,
    fresh: bool,
    rerun_from: tuple[str, ...],
    as_json: bool,
) -> None:
    """Show what a run of PATH would do: order, checkpoints, skips, cost (no model call)."""
    from ..compile.options import RunOptions
    from ..compile.shared import manifest_dir, override_of, provider_salt
    from ..compile.storekey import unseal
    from ..plan import Settings, preview
    from ..validate import load_workflow
    from .run import parse_context

    with handle_errors(json_output=as_json, root=path):
        workflow = load_workflow(path, import_tools=False)  # reads, never runs, its code
        context = parse_context(context_arg)
        options = RunOptions(provider=provider, replies=replies, fresh=fresh)
        override = override_of(options)
        storage = options.storage_for(workflow.root_dir)
        settings = Settings(
            manifests=manifest_dir(workflow.root_dir, options),
            results=storage if isinstance(storage, Path) else None,
            salt=lambda task: provider_salt(task, override, workflow),
            fresh=fresh,
            offline=override is not None and override.name in ("scripted", "replay"),
            unseal=unseal,
        )
        if rerun_from:
            from ..compile.rerun import covers, rerun_passes, resolve_targets
            from ..plan import build_plan

            targets = resolve_targets(workflow, rerun_from)
            passes = rerun_passes(build_plan(workflow), targets)
            settings.rerun = lambda path, phase: covers(passes, path, phase)
        result = preview(workflow, context, settings)
    document = result.to_dict()
    if as_json:
        print_json(document)
    else:
        _print(document)
    if any(budget["exceeded"] for budget in document["budgets"]):
        raise click.exceptions.Exit(EXIT_FAILED)


def _print(document: dict[str, Any]) -> None:
    console = get_console()
    table = Table(title=f"folpipe plan: {document['workflow']}")
    for column in ("wave", "task", "pass", "status", "why", "calls", "tokens in/out", "cost $"):
        table.add_column(column)
    for step in document["steps"]:
        estimate = step["estimate"]
        style = STATUS_STYLE.get(step["status"], "red")
        running = step["status"] in ("runs", "maybe skipped")
        table.add_row(
            step["wave"] or "-",
            escape((step["path"] or "(root)") + _iteration(step["iteration"])),
            step["phase"],
            f"[{style}]{step['status']}[/{style}]",
            escape("; ".join(step["reasons"])),
            str(estimate["model_calls"]) if running else "",
            f"{estimate['input_tokens']}/{estimate['output_tokens']}" if running else "",
            _money(estimate["cost"]) if running else "",
        )
    console.print(table)
    totals = document["totals"]
    console.print(
        f"{plural(totals['passes'], 'pass')}: {totals['from_checkpoints']} from checkpoints, "
        f"{totals['runs']} run, {totals['skipped']} skipped; estimate "
        f"{plural(totals['model_calls'], 'model call')}, "
        f"{totals['input_tokens']} + {totals['output_tokens']} tokens, "
        f"${_money(totals['cost'])}",
        markup=False,
        highlight=False,
    )
    if any(
        s["estimate"]["assumed_max_tokens"] and s["estimate"]["model_calls"]
        for s in document["steps"]
    ):
        console.print(
            "output tokens: the declared max_tokens, else 1024 a call (set `max_tokens:` in the "
            "provider block for a tighter estimate)",
            markup=False,
        )
    if totals["unpriced_models"]:
        names = ", ".join(totals["unpriced_models"])
        console.print(f"no price for: {names} (add `pricing:` to the root task.yaml)", markup=False)
    for budget in document["budgets"]:
        verdict = "[red]EXCEEDED[/red]" if budget["exceeded"] else "[green]ok[/green]"
        console.print(
            f"budget of {escape(budget['path'] or '(root)')}: tokens "
            f"{budget['estimated_tokens']}/{budget['token_budget']}, cost "
            f"${_money(budget['estimated_cost'])}/{budget['cost_budget']} {verdict}"
        )


def _iteration(number: int | None) -> str:
    return "" if number is None else f" [{number}]"


def _money(value: float | None) -> str:
    return "?" if value is None else f"{value:.4f}"
