"""``folpipe run PATH``: run a workflow as a Prefect flow (live view, or one JSON document).

Exit codes: 0 the workflow completed, 1 it failed, 2 invalid workflow / configuration / usage,
3 it completed but is not durable (a checkpoint or journal entry could not be written, FP541).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click
import yaml
from rich.table import Table

from .._process.wording import plural
from ..errors import ConfigError, FolpipeError, InfrastructureError
from ..workflow.jsondata import check_plain, load_yaml
from ..workflow.jsondata import loads as strict_json
from ..workflow.tree import Workflow
from ._approve import check_approvals, parse_approvals, terminal_approver
from ._interrupts import interruptions
from ._render import (
    EXIT_FAILED,
    EXIT_NOT_DURABLE,
    EXIT_OK,
    EXIT_USAGE,
    error_payload,
    get_console,
    handle_errors,
    print_error,
    print_json,
)


def parse_context(value: str | None) -> dict[str, Any]:
    """``--context``: a JSON object, or ``@file`` (JSON or YAML). Raises ``ConfigError`` FP402."""
    if not value:
        return {}
    source = "--context"
    text = value
    if value.startswith("@"):
        file = Path(value[1:])
        source = str(file)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read the --context file {file}: {exc.strerror}",
                code="FP402",
                hint='pass --context \'{"key": "value"}\' or --context @file.json',
            ) from None
    try:
        data = strict_json(text) if not value.startswith("@") else load_yaml(text, "the context")
        check_plain(data, "the context")
    except (ValueError, yaml.YAMLError) as exc:  # NotPlainJSON: NaN, dates, sets, deep nesting
        raise ConfigError(
            f"{source} is not valid JSON: {exc}",
            code="FP402",
            hint='pass a JSON object, e.g. --context \'{"topic": "prefect"}\'',
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source} must be a JSON object, got {type(data).__name__}",
            code="FP402",
            hint='wrap the values in an object: {"key": value}',
        )
    return data


def install_missing_dependencies(workflow: Workflow) -> None:
    """What the tasks declare in ``dependencies:`` is installed before the run
    (only what this interpreter lacks; progress goes to stderr, never into ``--json``)."""
    from ..deploy.dependencies import ensure_installed

    installed = ensure_installed(workflow)
    if installed:
        click.echo(f"installed missing dependencies: {', '.join(installed)}", err=True)


def load(path: Path) -> Workflow:
    from ..validate import load_workflow

    return load_workflow(path)


SUMMARY_COLUMNS = (
    "task", "status", "attempts", "iterations", "model calls", "tokens", "cached", "cost", "time",
)  # fmt: skip
OPTIONAL_COLUMNS = frozenset({"iterations", "cached", "cost"})
"""Shown only when a task has a value in them: an 80-column terminal fits the rest whole."""


def summary_table(result: Any) -> Table:
    """The per-task summary printed after a run. Task paths fold rather than lose their end;
    a status is never cut."""
    table = Table(title=f"{result.workflow}: {result.status}", title_justify="left")
    costs = getattr(result, "costs", None)
    rows = [_summary_cells(row, costs) for row in result.tasks]
    shown = [
        index
        for index, column in enumerate(SUMMARY_COLUMNS)
        if column not in OPTIONAL_COLUMNS or any(cells[index] for cells in rows)
    ]
    for index in shown:
        column = SUMMARY_COLUMNS[index]
        text = column in ("task", "status")
        table.add_column(
            column,
            justify="left" if text else "right",
            overflow="fold" if column == "task" else "ellipsis",
            no_wrap=column == "status",
            min_width=9 if column == "status" else None,
        )
    for cells in rows:
        table.add_row(*(cells[index] for index in shown))
    return table


def _summary_cells(row: dict[str, Any], costs: Any) -> list[str]:
    usage = row["usage"]
    cost = (costs.for_task(row["path"]) if costs is not None else None) or {}
    replayed = row.get("replayed_calls") or 0
    return [
        row["path"] or "(root)",
        row["status"],
        str(row["attempts"]),
        "" if row["iterations"] is None else str(row["iterations"]),
        f"{row['model_calls']} (+{replayed} replayed)" if replayed else str(row["model_calls"]),
        str(usage["input_tokens"] + usage["output_tokens"]),
        str(cost.get("cached_tokens") or ""),
        f"${cost['cost_usd']:.4f}" if cost.get("cost_usd") else "",
        f"{row['duration_s']:.2f}s",
    ]


class _NoFolpipeTracebacks(logging.Filter):
    """Console logs keep our errors' messages (code + text) but drop their tracebacks, and an
    info line prints none (Dask's ``distributed`` notes a connection its teardown closed, at
    INFO, with the traceback of the write that found it closed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, FolpipeError) or (exc is not None and record.levelno < logging.WARNING):
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_console_tracebacks() -> None:
    """Install the filter on Prefect's console handlers (the UI's API logs keep everything)."""
    for name in ("", "prefect", "prefect.flow_runs", "prefect.task_runs"):
        for handler in logging.getLogger(name).handlers:
            is_console = isinstance(handler, logging.StreamHandler)
            if is_console and not any(isinstance(f, _NoFolpipeTracebacks) for f in handler.filters):
                handler.addFilter(_NoFolpipeTracebacks())


def quiet_console_info() -> None:
    """Console handlers show warnings and errors only (the UI still gets every log)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setLevel(logging.WARNING)


def execute(workflow: Workflow, context: dict[str, Any], options: Any, as_json: bool) -> int:
    """Run, print (live view + summary, or the JSON document) and return the exit code."""
    from prefect.exceptions import TerminationSignal

    from ..compile import flush_artifacts, run_workflow  # Prefect sets up its log handlers
    from ..compile.report import EXIT_FLUSH_S

    quiet_console_tracebacks()
    with interruptions() as received:
        try:
            result = _run(run_workflow, workflow, context, options, as_json)
        except (KeyboardInterrupt, asyncio.CancelledError, TerminationSignal) as exc:
            result = _interrupted(workflow, context, options, exc, received.signal)
    code = report(workflow, result, as_json)
    # reports queued by the run are written now, not while the interpreter shuts down
    if not isinstance(result.error, InfrastructureError):
        flush_artifacts(EXIT_FLUSH_S)
    return code


def _run(
    run_workflow: Any, workflow: Workflow, context: dict[str, Any], options: Any, as_json: bool
) -> Any:
    console = get_console()
    from ..compile.api import missing_sdk_result

    refused = missing_sdk_result(workflow, context, options)
    if refused is not None:  # FP321: refused before a server or a flow run exists
        return refused
    failure = start_api()
    if failure is not None:  # FP523: the run never started
        from ..compile.api import not_run

        return not_run(workflow, context, failure)
    if as_json:
        if options.ask is None:
            options.ask = terminal_approver(get_console(stderr=True))
        with contextlib.redirect_stdout(sys.stderr):
            return run_workflow(workflow, context, options=options)
    from ._progress import ProgressView

    if console.is_terminal and "PREFECT_LOGGING_LEVEL" not in os.environ:
        quiet_console_info()  # the live view replaces Prefect's per-task INFO lines

    view = ProgressView(workflow, console)
    options.listeners.append(view.listener)
    if options.ask is None:
        options.ask = terminal_approver(get_console(stderr=True), view.paused)
    with view.live():
        return run_workflow(workflow, context, options=options)


def _interrupted(
    workflow: Workflow, context: dict[str, Any], options: Any, exc: BaseException, signum: Any
) -> Any:
    """The report of a run a signal stopped: what ran so far, and FP522."""
    from ..compile.api import not_run
    from ..compile.infra import interruption

    error = interruption(exc, signum)
    result = options.interrupted or not_run(workflow, context, error)
    result.error = error
    return result


def report(workflow: Workflow, result: Any, as_json: bool) -> int:
    """Print a run's outcome; its exit code."""
    console = get_console()
    if isinstance(result.error, ConfigError):
        if as_json:
            print_json(error_payload(result.error))
        else:
            print_error(result.error, get_console(stderr=True), root=workflow.root_dir)
        return EXIT_USAGE
    infrastructure = result.error if isinstance(result.error, InfrastructureError) else None
    if as_json:
        document = result.to_dict()
        if infrastructure is not None:  # the run did not complete for a reason outside it
            document["error"] = error_payload(infrastructure)["error"]
        print_json(document)
    else:
        if result.tasks:
            console.print(summary_table(result))
            _print_outcome(console, result)
        if infrastructure is not None:
            print_error(infrastructure, get_console(stderr=True), root=workflow.root_dir)
        print_store_warnings(console, result)
    if result.status != "completed":
        return EXIT_FAILED
    return EXIT_OK if getattr(result, "durable", True) else EXIT_NOT_DURABLE


def print_store_warnings(console: Any, result: Any) -> None:
    """The summary's lines for store entries refused (FP540) or not written (FP541)."""
    warnings = getattr(result, "warnings", None) or []
    for warning in warnings[:20]:
        where = warning.get("task") or warning.get("store")
        console.print(f"[yellow]! {warning['code']}[/yellow] {where}: {warning['message']}",
                      highlight=False, soft_wrap=True)  # fmt: skip
    if len(warnings) > 20:
        console.print(f"[yellow]! ... and {len(warnings) - 20} more (see --json)[/yellow]")
    if not getattr(result, "durable", True):
        console.print(
            "[yellow]the run completed but is not durable[/yellow] (exit 3): what was not "
            "stored runs again on the next run",
            highlight=False,
        )


def start_api() -> InfrastructureError | None:
    """Start the temporary Prefect server (when no API is configured) before the live view,
    with its one line on stderr; the FP523 error when it does not start."""
    from ..compile.infra import ensure_api

    errors = get_console(stderr=True)
    try:
        ensure_api(lambda line: errors.print(line, style="dim", soft_wrap=True))
    except InfrastructureError as exc:
        return exc
    return None


def _print_outcome(console: Any, result: Any) -> None:
    rerun = getattr(result, "rerun", None)
    line = checkpoint_line(result) if rerun is None else None
    if line:
        console.print(line)
    if rerun is not None:
        from ..compile.history import rerun_line

        console.print(rerun_line(rerun), markup=False, highlight=False, soft_wrap=True)
    usage = result.usage
    replayed = usage.get("replayed_calls") or 0
    costs = getattr(result, "costs", None)
    console.print(
        plural(usage["model_calls"], "model call")
        + (f" + {replayed} replayed from the journal" if replayed else "")
        + f", {usage['input_tokens']} in / {usage['output_tokens']} out tokens"
        + (f" · ${costs.total_usd:.4f}" if costs is not None else "")
        + f" · flow run {result.flow_run_id}",
        soft_wrap=True,  # the terminal wraps it: the id stays whole for copy and grep
    )
    declined = [row for row in result.tasks if str(row.get("error") or "").startswith("declined")]
    for row in declined[:5]:  # an approval said no: the table shows only "skipped"
        console.print(f"– {row['path'] or '(root)'}: {row['error']}", markup=False,
                      highlight=False, soft_wrap=True)  # fmt: skip
    if result.status == "failed":
        failed = [row for row in result.tasks if row["status"] == "failed" and row["error"]]
        for row in failed[:5]:
            console.print(f"[red]✗ {row['path'] or '(root)'}[/red]: {row['error']}")


def checkpoint_line(result: Any) -> str | None:
    """``7 of 9 tasks from checkpoints (--fresh to re-run)``, when any task was reused; the
    other outcomes follow when there are any (``2 ran, 1 skipped``). Counted as ``folpipe
    status`` and the run summary count (``compile.report.count_tasks``)."""
    from ..compile.report import count_tasks

    counts = count_tasks(row["status"] for row in result.tasks)
    if not counts.cached:
        return None
    others = ([f"{counts.completed} ran"] if counts.completed else []) + counts.rest()
    tail = f"; {', '.join(others)}" if others else ""
    return f"{counts.cached} of {counts.total} tasks from checkpoints{tail} (--fresh to re-run)"


def run_options(
    provider: str | None,
    replies: Path | None,
    fresh: bool,
    record: Path | None = None,
    approve: tuple[str, ...] = (),
) -> Any:
    from ..compile.options import RunOptions

    options = RunOptions(provider=provider, replies=replies, fresh=fresh, record=record)
    options.approvals = parse_approvals(approve)
    return options


@click.command(name="run")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--context", "context_arg", help="Initial context: a JSON object or @file.")
@click.option("--provider", help="Override every task's provider (e.g. scripted).")
@click.option(
    "--replies", type=click.Path(dir_okay=False, path_type=Path), help="Scripted replies file."
)
@click.option("--fresh", is_flag=True, help="Ignore checkpoints: re-run every task.")
@click.option(
    "--from",
    "rerun_from",
    multiple=True,
    metavar="TASK",
    help="Re-run TASK (name or path; repeatable) and what runs after it or depends on it; "
    "restore the tasks before it from their checkpoints.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Record every model call to this cassette (replay it with the replay provider).",
)
@click.option(
    "--approve",
    multiple=True,
    metavar="[TARGET:]KEY=VALUE",
    help="Answer approval gates ahead (CI): e.g. --approve approved=true --approve "
    "ship:comment=ok; a tool's calls: --approve deploy:approved=no (or TASK/TOOL:...). "
    "Without it a terminal asks; a deployment waits in the Prefect UI.",
)
@click.option(
    "--install-deps/--no-install-deps",
    default=True,
    help="Install the tasks' missing `dependencies:` before the run (default: on).",
)
def command(
    path: Path,
    context_arg: str | None,
    provider: str | None,
    replies: Path | None,
    fresh: bool,
    rerun_from: tuple[str, ...],
    as_json: bool,
    record: Path | None,
    approve: tuple[str, ...],
    install_deps: bool,
) -> None:
    """Run the workflow folder PATH as a Prefect flow."""
    with handle_errors(json_output=as_json, root=path):
        context = parse_context(context_arg)
        workflow = load(path)
        if install_deps:
            install_missing_dependencies(workflow)
        options = run_options(provider, replies, fresh, record, approve)
        if rerun_from:
            from ..compile.rerun import resolve_targets

            options.rerun_from = resolve_targets(workflow, rerun_from)
        check_approvals(workflow, options.approvals)  # nothing given is left unused
    raise click.exceptions.Exit(execute(workflow, context, options, as_json))
