"""Benchmarks of the translator against hand-written Prefect flows and the ideal.

    .venv/bin/python benchmarks/run_benchmarks.py [--only 1,2,...,14] [--repeat N]
        [--json out.json] [--server sqlite|postgres [--fresh-db]]

Uses whatever Prefect API the environment selects: the ephemeral SQLite server by default
(set PREFECT_HOME to a scratch folder), or PREFECT_API_URL; ``--server`` starts a
``prefect server`` on SQLite or on a throwaway PostgreSQL and measures against it. Each
scenario runs once per repetition, folpipe and the hand-written flow side by side in the same
process, with a pause between measurements so the server has finished recording the previous
run. Scenarios 8-14 (issue 15) live in ``scale.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import handwritten  # noqa: E402
import scale  # noqa: E402
import workflows  # noqa: E402

SETTLE_S = float(os.environ.get("BENCH_SETTLE_S", "12"))
"""The SQLite server records a run's events for seconds after it returns (a 200-task run:
over 3 s); a measurement started sooner pays for the previous run's backlog."""


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def _settle() -> None:
    time.sleep(SETTLE_S)


def _run_folpipe(path: Path, **options: Any) -> tuple[float, Any]:
    """One run (until ``run_workflow`` returns); ``result.artifacts_s`` is how much longer the
    background writer took to write the run's artifacts."""
    from prefect_folpipe.compile import RunOptions, flush_artifacts, run_workflow

    seconds, result = _timed(lambda: run_workflow(path, options=RunOptions(**options)))
    result.artifacts_s, _ = _timed(flush_artifacts)
    return seconds, result


def _folpipe_variants(wf: Path) -> tuple[Any, dict[str, float]]:
    """folpipe with its defaults, with summary artifacts only, and with untagged task runs
    (the defaults' result first, for its status and artifact tail)."""
    _settle()
    folpipe_s, result = _run_folpipe(wf, fresh=True)
    _settle()
    lean_s, _ = _run_folpipe(wf, fresh=True, artifacts="summary")
    _settle()
    untagged_s, _ = _run_folpipe(wf, fresh=True, task_tags=False)
    return result, {
        "folpipe_s": folpipe_s,
        "folpipe_summary_artifacts_s": lean_s,
        "folpipe_artifacts_written_after_s": result.artifacts_s,
        "folpipe_untagged_task_runs_s": untagged_s,
    }


def _hand_storage(scratch: Path) -> str:
    return str(scratch / "hand" / ".folpipe" / "results")  # as deep as folpipe's


def _run_hand(flow_call: Callable[[], Awaitable[Any]]) -> float:
    seconds, _ = _timed(lambda: asyncio.run(flow_call()))
    return seconds


def bench_parallel_leaves(scratch: Path) -> dict[str, Any]:
    result, folpipe = _folpipe_variants(workflows.parallel_leaves(scratch / "parallel"))
    _settle()
    hand_s = _run_hand(lambda: handwritten.parallel_leaves(50, 1.0))
    _settle()
    storage = _hand_storage(scratch)
    same_s = _run_hand(lambda: handwritten.parallel_leaves_same_work(50, 1.0, storage))
    return {
        "name": "(1) 50 parallel leaves, 1 s latency",
        "ideal_s": 1.0,
        **folpipe,
        "hand_s": hand_s,
        "hand_same_work_s": same_s,
        "ok": result.status == "completed",
    }


def bench_parallel_branches(scratch: Path) -> dict[str, Any]:
    as_task = workflows.parallel_branches(scratch / "branches-task")
    as_subflow = workflows.parallel_branches(scratch / "branches-subflow", branch_as="subflow")
    _settle()
    task_s, result = _run_folpipe(as_task, fresh=True)
    _settle()
    lean_s, _ = _run_folpipe(as_task, fresh=True, artifacts="summary")
    _settle()
    subflow_s, _ = _run_folpipe(as_subflow, fresh=True)
    _settle()
    hand_s = _run_hand(lambda: handwritten.parallel_branches(20, 1.0))
    return {
        "name": "(2) 20 parallel branches x 2 sequential leaves, 1 s latency",
        "ideal_s": 2.0,
        "folpipe_s": task_s,
        "folpipe_summary_artifacts_s": lean_s,
        "folpipe_artifacts_written_after_s": result.artifacts_s,
        "folpipe_branch_as_subflow_s": subflow_s,
        "hand_s": hand_s,
        "ok": result.status == "completed",
    }


def bench_sequential_branches(scratch: Path) -> dict[str, Any]:
    as_task = workflows.sequential_branches(scratch / "seq-task")
    as_subflow = workflows.sequential_branches(scratch / "seq-subflow", branch_as="subflow")
    _settle()
    task_s, result = _run_folpipe(as_task, fresh=True)
    _settle()
    subflow_s, other = _run_folpipe(as_subflow, fresh=True)
    return {
        "name": "(6) 5 sequential branches x 2 sequential leaves, 0.2 s latency",
        "ideal_s": 2.0,
        "folpipe_s": task_s,
        "folpipe_branch_as_subflow_s": subflow_s,
        "ok": result.status == "completed" and other.status == "completed",
    }


def bench_chain(scratch: Path) -> dict[str, Any]:
    wf = workflows.sequential_chain(scratch / "chain")
    result, folpipe = _folpipe_variants(wf)
    _settle()
    hand_s = _run_hand(lambda: handwritten.sequential_chain(200))
    _settle()
    storage = _hand_storage(scratch)
    hand_ckpt_s = _run_hand(lambda: handwritten.sequential_chain_checkpointed(200, storage))
    _settle()
    same_s = _run_hand(lambda: handwritten.sequential_chain_same_work(200, storage))
    _settle()
    cached_s, _ = _run_folpipe(wf)
    return {
        "name": "(3) 200-task sequential chain, 0 latency",
        "ideal_s": 0.0,
        **folpipe,
        "folpipe_all_cached_s": cached_s,
        "hand_s": hand_s,
        "hand_checkpointed_s": hand_ckpt_s,
        "hand_same_work_s": same_s,
        "ok": result.status == "completed",
    }


def bench_resume(scratch: Path) -> dict[str, Any]:
    wf = workflows.failing_tail(scratch / "resume", fail=True)
    _settle()
    first_s, first = _run_folpipe(wf)
    workflows.failing_tail(scratch / "resume", fail=False)  # fixes the replies only
    _settle()
    second_s, second = _run_folpipe(wf)
    repeated = sum(row["model_calls"] for row in second.tasks if row["path"] != "last")
    return {
        "name": "(4) resume after a failure at the last of 10 tasks",
        "first_status": first.status,
        "second_status": second.status,
        "first_s": first_s,
        "resumed_s": second_s,
        "model_calls_repeated": repeated,
        "model_calls_resumed_run": second.usage["model_calls"],
        "ok": first.status == "failed" and second.status == "completed",
    }


def _cold(cmd: list[str]) -> float:
    seconds, proc = _timed(lambda: subprocess.run(cmd, capture_output=True, text=True))
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {proc.stderr[-2000:]}")
    return seconds


def bench_cold_start(scratch: Path, repeats: int = 3) -> dict[str, Any]:
    wf = workflows.one_task(scratch / "one")
    folpipe_cmd = [sys.executable, "-m", "prefect_folpipe", "run", str(wf), "--json", "--fresh"]
    bare_cmd = [sys.executable, str(HERE / "handwritten.py")]
    folpipe_runs, bare_runs = [], []
    for _ in range(repeats):  # interleaved, so load changes hit both alike
        _settle()
        folpipe_runs.append(_cold(folpipe_cmd))
        _settle()
        bare_runs.append(_cold(bare_cmd))
    return {
        "name": "(5) cold start: `folpipe run` of a one-task workflow vs a bare flow run",
        "folpipe_s": sorted(folpipe_runs)[len(folpipe_runs) // 2],
        "hand_s": sorted(bare_runs)[len(bare_runs) // 2],
        "folpipe_runs_s": folpipe_runs,
        "hand_runs_s": bare_runs,
        "ok": True,
    }


def _bytes_under(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _journal_run(scratch: Path, calls: int) -> dict[str, Any]:
    wf = workflows.long_conversation(scratch / f"journal-{calls}", calls=calls)
    _settle()
    seconds, result = _run_folpipe(wf, fresh=True)
    reader = next(row for row in result.tasks if row["path"] == "reader")
    results = wf / ".folpipe" / "results"
    return {
        "calls": reader["model_calls"],
        "seconds": seconds,
        "journal_bytes": _bytes_under(results / "journal"),
        "result_store_bytes": _bytes_under(results),
        "sent_bytes": reader["usage"]["input_tokens"] * 4,  # every request, summed (O(N^2))
        "ok": result.status == "completed",
    }


def bench_journal(scratch: Path) -> dict[str, Any]:
    """(7) bytes written to the result store by the journal of a 100-call conversation that
    grows to ~200k tokens (5 KB tool outputs), against the conversation itself, what the
    requests carried, and a hand-written flow with one persisted task per model call."""
    half = _journal_run(scratch, 50)
    full = _journal_run(scratch, 100)
    conversation = 99 * (5000 + 3000)  # tool outputs + answers: the final transcript's body
    hand_store = scratch / "hand-journal"
    _settle()
    hand_s = _run_hand(lambda: handwritten.long_conversation(100, str(hand_store)))
    return {
        "name": "(7) journal of 100 model calls growing to ~200k tokens, 5 KB tool outputs",
        "folpipe_s": full["seconds"],
        "journal_bytes": full["journal_bytes"],
        "journal_bytes_50_calls": half["journal_bytes"],
        "growth_50_to_100": full["journal_bytes"] / max(1, half["journal_bytes"]),
        "conversation_bytes": conversation,
        "journal_over_conversation": full["journal_bytes"] / conversation,
        "requests_carried_bytes": full["sent_bytes"],
        "approx_tokens_final_conversation": conversation // 4,
        "result_store_bytes": full["result_store_bytes"],
        "hand_per_call_tasks_s": hand_s,
        "hand_per_call_tasks_bytes": _bytes_under(hand_store),
        "ok": full["ok"] and half["ok"],
    }


SCENARIOS = {
    "1": bench_parallel_leaves,
    "2": bench_parallel_branches,
    "3": bench_chain,
    "4": bench_resume,
    "5": bench_cold_start,
    "6": bench_sequential_branches,
    "7": bench_journal,
    "8": scale.bench_cached_reruns,
    "9": scale.bench_wide_tree,
    "10": scale.bench_wide_group,
    "11": scale.bench_nesting,
    "12": scale.bench_overhead,
    "13": scale.bench_cold_server,
    "14": scale.bench_memory,
}


def _warm_up(scratch: Path) -> None:
    """Start the API (ephemeral server) and import both code paths once, outside every
    measurement (the cold start is scenario 5)."""
    asyncio.run(handwritten.one_task())
    _run_folpipe(workflows.one_task(scratch / "warm-up"), fresh=True)


def on_server(kind: str, argv: list[str], fresh_db: bool = False) -> int:
    """Run the benchmarks (``argv``, minus ``--server``) in a child process against a
    ``prefect server start`` of its own: SQLite in a temporary home, or a throwaway
    PostgreSQL cluster (tests/deploy/postgres.py; needs Debian's ``postgresql``)."""
    import contextlib

    sys.path.insert(0, str(HERE.parent))
    from tests.deploy.postgres import running_postgres
    from tests.deploy.server import start_server

    with contextlib.ExitStack() as stack:
        database = None
        if kind == "postgres":  # durable: as production runs it (fsync on)
            database = stack.enter_context(running_postgres(durable=True)).url
        server = start_server(database_url=database)
        stack.callback(server.stop)
        print(f"# {kind} server at {server.url} (ready in {server.startup_s:.1f} s)", flush=True)
        env = {
            **os.environ,
            "PREFECT_API_URL": server.url,
            "BENCH_SERVER": kind,
            "BENCH_SERVER_PID": str(server.process.pid),  # scale.py counts its CPU
            "BENCH_SERVER_HOME": str(server.home),  # fresh_server.py restores its database
            "BENCH_FRESH_DB": "1" if fresh_db else "0",
        }
        return subprocess.run([sys.executable, __file__, *argv], env=env).returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="1,2,3,4,5,6,7")
    parser.add_argument("--json", dest="json_out", type=Path)
    parser.add_argument("--repeat", type=int, default=1, help="measure each scenario N times")
    parser.add_argument(
        "--server",
        choices=("sqlite", "postgres"),
        help="start a `prefect server` (SQLite or PostgreSQL) and measure against it",
    )
    parser.add_argument(
        "--fresh-db",
        action="store_true",
        help="with --server sqlite: each measured run of scenarios 9 and 10 meets the database "
        "as the scenario's warm-up left it (fresh_server.py)",
    )
    args = parser.parse_args()
    if args.fresh_db and args.server != "sqlite":
        parser.error("--fresh-db needs --server sqlite")
    if args.server:
        argv = [arg for arg in sys.argv[1:] if arg != "--fresh-db"]
        at = argv.index("--server")
        raise SystemExit(on_server(args.server, argv[:at] + argv[at + 2 :], args.fresh_db))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    results = []
    with tempfile.TemporaryDirectory(prefix="folpipe-bench-") as scratch:
        _warm_up(Path(scratch))
        for key in args.only.split(","):
            for attempt in range(args.repeat):
                outcome = SCENARIOS[key.strip()](Path(scratch) / f"{key.strip()}-{attempt}")
                outcome["server"] = os.environ.get("BENCH_SERVER", "ephemeral")
                print(json.dumps(outcome, default=float), flush=True)
                results.append(outcome)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2, default=float))


if __name__ == "__main__":
    main()
