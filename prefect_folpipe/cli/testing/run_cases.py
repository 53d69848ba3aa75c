"""``folpipe test PATH [--json] [-k TEXT] [--repeat N --min-pass F]``: run a workflow's
companion test cases.

Cases come from ``tests.yaml`` beside the root task.yaml and ``tests/*.yaml``
(``_testfile``); each runs for real on Prefect with its stubs (``_testrun``), a recorded case
strictly against its recording (``_strict``). Prints a pass/fail table (or one JSON document);
exit 0 when every case passes, 1 when one fails, 2 for an invalid workflow or tests file.
``--repeat N`` runs each case N times (cases against live models) and passes a case when its
pass rate reaches ``--min-pass`` (default: every run). See docs/testing.md.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from .._render import EXIT_FAILED, get_console, handle_errors, print_json
from ._case_run import CaseResult, run_case
from ._cases_file import TestCase, load_cases
from ._logs import log_file, logs_to_file


@dataclass
class Verdict:
    """A case over its ``--repeat`` runs."""

    case: TestCase
    runs: list[CaseResult] = field(default_factory=list)
    min_pass: float = 1.0

    @property
    def passed(self) -> int:
        return sum(run.ok for run in self.runs)

    @property
    def rate(self) -> float:
        return self.passed / len(self.runs) if self.runs else 0.0

    @property
    def ok(self) -> bool:
        return bool(self.runs) and self.rate >= self.min_pass - 1e-9

    def failures(self) -> list[str]:
        return next((run.failures for run in self.runs if not run.ok), [])

    def to_dict(self, repeat: int) -> dict[str, Any]:
        document = self.runs[-1].to_dict() if self.runs else {"name": self.case.name}
        document["ok"] = self.ok
        document["failures"] = self.failures()
        if repeat > 1:
            document |= {"runs": len(self.runs), "passed": self.passed}
            document["pass_rate"] = round(self.rate, 4)
        return document


@click.command(name="run")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document of the results.")
@click.option("-k", "select", default=None, help="Run only cases whose name contains TEXT.")
@click.option(
    "-v", "--verbose", is_flag=True, help="Show Prefect's run logs here, not in a log file."
)
@click.option(
    "--repeat", type=click.IntRange(min=1), default=1, help="Run each case N times (live models)."
)
@click.option(
    "--min-pass",
    type=click.FloatRange(0.0, 1.0),
    default=1.0,
    help="With --repeat: a case passes when this fraction of its runs pass (default 1.0).",
)
def command(
    path: Path, as_json: bool, select: str | None, verbose: bool, repeat: int, min_pass: float
) -> None:
    """Run the test cases of the workflow at PATH (tests.yaml, tests/*.yaml)."""
    from ...validate import load_workflow

    verdicts: list[Verdict] = []
    logs: Path | None = None
    with handle_errors(json_output=as_json, root=path):
        workflow = load_workflow(path)
        quiet_tracebacks()
        cases = [c for c in load_cases(path) if select is None or select in c.name]
        if cases:
            from ...compile.infra import ensure_api  # Prefect sets up its log handlers

            logs = None if verbose else log_file(workflow.name)
            with (
                logs_to_file(logs) as to_file,
                tempfile.TemporaryDirectory(prefix="folpipe-test-") as scratch,
            ):
                ensure_api(to_file.write if to_file is not None else None)
                for index, case in enumerate(cases):
                    verdict = Verdict(case, min_pass=min_pass)
                    for number in range(repeat):
                        folder = Path(scratch) / f"{index}-{number}"
                        verdict.runs.append(run_case(workflow, case, folder))
                    verdicts.append(verdict)
    failed = [v for v in verdicts if not v.ok]
    if as_json:
        document: dict[str, Any] = {
            "ok": not failed,
            "passed": len(verdicts) - len(failed),
            "failed": len(failed),
            "cases": [v.to_dict(repeat) for v in verdicts],
        }
        if repeat > 1:
            document |= {"repeat": repeat, "min_pass": min_pass}
        print_json(document)
    else:
        _print_table(verdicts, path, repeat)
    if logs is not None:
        get_console(stderr=True).print(
            f"Prefect's run logs: {logs} (-v shows them here)", highlight=False, soft_wrap=True
        )
    if failed:
        raise click.exceptions.Exit(EXIT_FAILED)


def quiet_tracebacks() -> None:
    """A case that fails on purpose logs our coded errors, not their tracebacks (as a run)."""
    from ...compile import run_workflow  # noqa: F401  (Prefect sets up its log handlers)
    from ..run import quiet_console_tracebacks

    quiet_console_tracebacks()


def _print_table(verdicts: list[Verdict], path: Path, repeat: int) -> None:
    console = get_console()
    table = Table(title=f"folpipe test {path}")
    table.add_column("case")
    table.add_column("file:line")
    table.add_column("result")
    table.add_column("details")
    diffs: list[str] = []
    for verdict in verdicts:
        word = "[green]pass[/green]" if verdict.ok else "[red]FAIL[/red]"
        if repeat > 1:
            word += f" {verdict.passed}/{len(verdict.runs)} ({verdict.rate:.0%})"
        failures = verdict.failures()
        last = verdict.runs[-1]
        details = "\n".join(f.splitlines()[0] for f in failures)
        details = details or f"{last.status}, {last.duration_s:.1f}s"
        diffs += [f for f in failures if "\n" in f]
        where = f"{verdict.case.file}:{verdict.case.line}"
        table.add_row(escape(verdict.case.name), escape(where), word, escape(details))
    console.print(table)
    for text in diffs:  # a recorded request that changed: its diff, whole
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    passed = sum(v.ok for v in verdicts)
    colour = "green" if passed == len(verdicts) else "red"
    threshold = f" (min pass rate {verdicts[0].min_pass:.0%})" if repeat > 1 and verdicts else ""
    console.print(
        f"[{colour}]{passed} passed, {len(verdicts) - passed} failed{threshold}[/{colour}]"
    )
