"""``folpipe test PATH [--json] [-k TEXT]``: run a workflow's companion test cases.

Cases come from ``tests.yaml`` beside the root task.yaml and ``tests/*.yaml``
(``_testfile``); each runs for real on Prefect with its stubs (``_testrun``). Prints a
pass/fail table (or one JSON document); exit 0 when every case passes, 1 when one fails, 2 for
an invalid workflow or tests file. See docs/testing.md.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ._render import EXIT_FAILED, get_console, handle_errors, print_json
from ._testfile import load_cases
from ._testlogs import log_file, logs_to_file
from ._testrun import CaseResult, run_case


@click.command(name="test")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document of the results.")
@click.option("-k", "select", default=None, help="Run only cases whose name contains TEXT.")
@click.option(
    "-v", "--verbose", is_flag=True, help="Show Prefect's run logs here, not in a log file."
)
def command(path: Path, as_json: bool, select: str | None, verbose: bool) -> None:
    """Run the test cases of the workflow at PATH (tests.yaml, tests/*.yaml)."""
    from ..validate import load_workflow

    results: list[CaseResult] = []
    logs: Path | None = None
    with handle_errors(json_output=as_json, root=path):
        workflow = load_workflow(path)
        cases = [c for c in load_cases(path) if select is None or select in c.name]
        if cases:
            from ..compile.infra import ensure_api  # Prefect sets up its log handlers

            logs = None if verbose else log_file(workflow.name)
            with (
                logs_to_file(logs) as to_file,
                tempfile.TemporaryDirectory(prefix="folpipe-test-") as scratch,
            ):
                ensure_api(to_file.write if to_file is not None else None)
                for index, case in enumerate(cases):
                    results.append(run_case(workflow, case, Path(scratch) / str(index)))
    failed = [r for r in results if not r.ok]
    if as_json:
        print_json(
            {
                "ok": not failed,
                "passed": len(results) - len(failed),
                "failed": len(failed),
                "cases": [r.to_dict() for r in results],
            }
        )
    else:
        _print_table(results, path)
    if logs is not None:
        get_console(stderr=True).print(
            f"Prefect's run logs: {logs} (-v shows them here)", highlight=False, soft_wrap=True
        )
    if failed:
        raise click.exceptions.Exit(EXIT_FAILED)


def _print_table(results: list[CaseResult], path: Path) -> None:
    console = get_console()
    table = Table(title=f"folpipe test {path}")
    table.add_column("case")
    table.add_column("file:line")
    table.add_column("result")
    table.add_column("details")
    for result in results:
        verdict = "[green]pass[/green]" if result.ok else "[red]FAIL[/red]"
        details = "\n".join(result.failures) or f"{result.status}, {result.duration_s:.1f}s"
        where = f"{result.case.file}:{result.case.line}"
        table.add_row(escape(result.case.name), escape(where), verdict, escape(details))
    console.print(table)
    passed = sum(r.ok for r in results)
    colour = "green" if passed == len(results) else "red"
    console.print(f"[{colour}]{passed} passed, {len(results) - passed} failed[/{colour}]")
