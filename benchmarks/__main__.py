"""``python -m benchmarks``: run the scenarios of scenarios.yaml and print one row each,
prefect_folpipe beside the hand-written Prefect flows of the same shape and the ideal.

    python -m benchmarks                      # every scenario, on a SQLite `prefect server`
    python -m benchmarks --quick              # small shapes, one repetition: a minute or two
    python -m benchmarks --only chain,parallel_leaves --server postgres
    python -m benchmarks --list | --dry-run   # the table; build and validate the folders only
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

from . import kinds, measure, report, table


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small shapes, one repetition")
    parser.add_argument("--only", help="comma-separated scenario names (default: all)")
    parser.add_argument("--repeat", type=int, help="repetitions of every scenario")
    parser.add_argument(
        "--server",
        choices=("sqlite", "postgres", "ephemeral"),
        default="sqlite",
        help="a `prefect server` of the benchmark's own on SQLite (default) or a throwaway "
        "PostgreSQL, or Prefect's temporary in-process server",
    )
    parser.add_argument("--settle", type=float, help="seconds between runs (default 12, quick 1)")
    parser.add_argument("--json", type=Path, help="also write every run to this file")
    parser.add_argument("--list", action="store_true", help="print the scenarios and stop")
    parser.add_argument(
        "--dry-run", action="store_true", help="build and validate the folders, run nothing"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        chosen = table.select(table.load(quick=args.quick), args.only, args.repeat)
    except table.TableError as exc:
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for scenario in chosen:
            print(f"{scenario.name:22} {scenario.kind:6} {scenario.title}")
        return 0
    if args.dry_run:
        return dry_run(chosen)
    return measure_all(chosen, args)


def dry_run(chosen: list[table.Scenario]) -> int:
    """Check every function named and build and validate every folder; run nothing (and
    import no Prefect)."""
    from prefect_folpipe.validate import validate_workflow

    table.check_names({s.name: s for s in chosen})
    failed = 0
    with tempfile.TemporaryDirectory(prefix="folpipe-bench-") as scratch:
        for scenario in chosen:
            folder = kinds.build_folder(scenario, Path(scratch) / scenario.name)
            diagnostics = validate_workflow(folder)
            failed += bool(diagnostics)
            print(f"{scenario.name:22} {'ok' if not diagnostics else diagnostics[:3]}")
    return 1 if failed else 0


@contextlib.contextmanager
def api(kind: str) -> Iterator[str]:
    """The Prefect API the runs use: a server started here, or the temporary one."""
    if kind == "ephemeral":
        yield "Prefect's temporary server"
        return
    from . import server

    database, stop_database = None, None
    if kind == "postgres":
        from . import postgres

        cluster = postgres.start()
        database, stop_database = cluster.url, cluster.stop
    running = server.start(database)
    os.environ["PREFECT_API_URL"] = running.url
    measure.SETTLE.server_pid = running.process.pid
    try:
        yield f"`prefect server` on {kind} (started in {running.startup_s:.1f} s)"
    finally:
        running.stop()
        if stop_database is not None:
            stop_database()


def measure_all(chosen: list[table.Scenario], args: argparse.Namespace) -> int:
    """Run the scenarios against the chosen API and print the results table."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("PREFECT_CLIENT_MAX_RETRIES", "10")  # a busy server's 503s, retried
    measure.SETTLE.pause_s = args.settle if args.settle is not None else 1.0 if args.quick else 12.0
    measure.SETTLE.limit_s = 30.0 if args.quick else 180.0
    rows: list[report.Row] = []
    failures: list[str] = []
    load_before, began = os.getloadavg(), time.monotonic()
    with api(args.server) as where, tempfile.TemporaryDirectory(prefix="folpipe-bench-") as tmp:
        scratch = Path(tmp)
        table.check_functions({s.name: s for s in chosen})  # imports Prefect: after api()
        _warm_up(scratch / "warm-up")
        for scenario in chosen:
            print(f"# {scenario.name}: {scenario.title} ...", file=sys.stderr, flush=True)
            try:
                rows.append(kinds.KINDS[scenario.kind](scenario, scratch / scenario.name))
            except Exception as exc:  # keep the other scenarios' rows
                traceback.print_exc()
                failures.append(f"{scenario.name}: {exc}")
                continue
            print(rows[-1].markdown(), file=sys.stderr, flush=True)
    print(_heading(where, args, load_before, time.monotonic() - began))
    print(report.table(rows))
    for failure in failures:
        print(f"\nFAILED {failure}")
    if args.json:
        args.json.write_text(report.dump(rows), encoding="utf-8")
    return 1 if failures else 0


def _warm_up(scratch: Path) -> None:
    """Start the API and import both code paths once, outside every measurement."""
    from . import handwritten, workflows

    asyncio.run(handwritten.one_task())
    measure.run_folpipe(workflows.one_task(scratch), fresh=True)


def _heading(where: str, args: argparse.Namespace, load: tuple[float, ...], took: float) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    after = os.getloadavg()
    mode = "--quick, " if args.quick else ""
    return (
        f"\n{now}, {mode}{where}, Prefect {version('prefect')}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs; load average "
        f"{load[0]:.1f} before, {after[0]:.1f} after; {took / 60:.1f} min; best of each "
        f"scenario's repetitions, {measure.SETTLE.pause_s:g} s + idle server apart\n"
    )


if __name__ == "__main__":
    sys.exit(main())
