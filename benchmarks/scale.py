"""Issue 15's scenarios: cached re-runs, big trees against hand-written flows, deep nesting,
the per-task overhead, cold starts and memory. ``run_benchmarks.py`` runs them (8-14).

Every measurement is wall-clock time plus the CPU time of this process and of the Prefect
server process(es) (``Meter``): on a machine shared with other work the CPU seconds move much
less than the wall clock, so both are recorded and ratios are taken side by side in one
process, with the usual settle time between runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import fresh_server  # noqa: E402
import handwritten  # noqa: E402
import trees  # noqa: E402
import workflows  # noqa: E402

SETTLE_S = float(os.environ.get("BENCH_SETTLE_S", "12"))


IDLE_CPU = float(os.environ.get("BENCH_IDLE_CPU", "0.1"))
"""Server CPU seconds per second below which the server counts as idle."""


def settle(limit_s: float = 180.0) -> None:
    """The settle time, then until the server has caught up with the last run's events (its
    CPU under ``IDLE_CPU`` s per second, at most ``limit_s``): on a loaded machine a fixed
    sleep left a 1,000-task run's backlog to the next measurement."""
    time.sleep(SETTLE_S)
    server_idle_at(limit_s)


def server_idle_at(limit_s: float) -> float:
    """When (``perf_counter``) the server's CPU first went idle: the first second in which it
    used under ``IDLE_CPU`` s (1 s resolution; after ``limit_s``, the time it gave up)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        servers = server_processes()
        checked, before = time.perf_counter(), _cpu(servers)
        time.sleep(1.0)
        if _cpu(servers) - before < IDLE_CPU:
            return checked
    return time.perf_counter()


def server_processes() -> list[psutil.Process]:
    """The Prefect server(s) this process talks to: its temporary server (a child process),
    or the one ``BENCH_SERVER_PID`` names (started by ``run_benchmarks.py --server``)."""
    pid = os.environ.get("BENCH_SERVER_PID")
    root = psutil.Process(int(pid)) if pid else psutil.Process()
    found = [root] if pid else []
    with contextlib.suppress(psutil.Error):
        found += root.children(recursive=True)
    return found


def _cpu(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


class Meter:
    """Wall seconds, this process's CPU seconds and the server's, of one measured call."""

    def __init__(self) -> None:
        self.servers = server_processes()

    def measure(self, fn: Callable[[], Any]) -> tuple[dict[str, float], Any]:
        self.servers = server_processes()  # a temporary server may have started since
        wall, cpu, server = time.perf_counter(), time.process_time(), _cpu(self.servers)
        value = fn()
        return {
            "wall_s": time.perf_counter() - wall,
            "cpu_s": time.process_time() - cpu,
            "server_cpu_s": _cpu(self.servers) - server,
        }, value


def recorded_after(started: float, limit_s: float = 300.0) -> float:
    """Seconds from ``started`` until the server has recorded a run: its CPU idle (under
    ``IDLE_CPU`` s a second) for the first time. A SQLite server records a big run's events
    for tens of seconds after the run returns, whoever ran it (1 s resolution)."""
    return server_idle_at(limit_s) - started


def run_folpipe(path: Path, meter: Meter, **options: Any) -> tuple[dict[str, float], Any]:
    """One ``run_workflow`` until it returns; ``artifacts_s``: how much longer the background
    writer took to write the run's reports; ``recorded_s``: until the server had recorded
    everything (run, reports, events)."""
    from prefect_folpipe.compile import RunOptions, flush_artifacts, run_workflow

    begun, begun_epoch = time.perf_counter(), time.time()
    numbers, result = meter.measure(lambda: run_workflow(path, options=RunOptions(**options)))
    numbers["begun_epoch"], numbers["returned_epoch"] = begun_epoch, time.time()
    started = time.perf_counter()
    flush_artifacts()
    numbers["artifacts_s"] = time.perf_counter() - started
    numbers["recorded_s"] = recorded_after(begun)
    numbers["status"] = result.status  # type: ignore[assignment]
    if result.status != "completed":
        numbers["error"] = str(result.error)[:500]  # type: ignore[assignment]
    return numbers, result


def run_hand(flow_call: Callable[[], Any], meter: Meter) -> dict[str, float]:
    begun, begun_epoch = time.perf_counter(), time.time()
    numbers, _ = meter.measure(lambda: asyncio.run(flow_call()))
    numbers["begun_epoch"], numbers["returned_epoch"] = begun_epoch, time.time()
    numbers["recorded_s"] = recorded_after(begun)
    return numbers


def _ratio(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    ratios = {
        "wall": round(a["wall_s"] / b["wall_s"], 3),
        "cpu": round((a["cpu_s"] + a["server_cpu_s"]) / (b["cpu_s"] + b["server_cpu_s"]), 3),
        "recorded": round(a["recorded_s"] / b["recorded_s"], 3),
    }
    if "rows_recorded_s" in a and "rows_recorded_s" in b:
        ratios["rows_recorded"] = round(a["rows_recorded_s"] / b["rows_recorded_s"], 3)
    return ratios


# -- when the server wrote a run's last row (SQLite) ------------------------------------------

_LAST_WRITES = {
    "events": "SELECT max(created) FROM events WHERE occurred >= :begun AND occurred <= :until",
    "task_run": "SELECT max(updated) FROM task_run WHERE created >= :begun",
    "task_run_state": "SELECT max(created) FROM task_run_state WHERE created >= :begun",
    "flow_run": "SELECT max(updated) FROM flow_run WHERE created >= :begun",
    "log": "SELECT max(created) FROM log WHERE timestamp >= :begun AND timestamp <= :until",
    "artifact": "SELECT max(updated) FROM artifact WHERE created >= :begun",
}
"""Per table, the last write belonging to a run that began at ``begun`` and returned before
``until``: events the run emitted (``created``: when the server stored them), its task and
flow runs and their states, its logs and reports. Timestamps are the server's, UTC."""


def _stamp(epoch: float) -> str:
    """An epoch second as the server's SQLite rows write it (naive UTC)."""
    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def last_writes(numbers: dict[str, Any]) -> dict[str, float] | None:
    """Seconds from a run's start until the server wrote the last row of each kind that the run
    produced (read after the server has settled; None without a SQLite database). Unlike
    "first idle second" (``recorded_s``), this does not depend on when the server's CPU
    happens to pause."""
    path = fresh_server.database()
    if path is None or not path.exists():
        return None
    begun = numbers["begun_epoch"]
    window = {"begun": _stamp(begun), "until": _stamp(numbers["returned_epoch"] + 1.0)}
    out: dict[str, float] = {}
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        for table, query in _LAST_WRITES.items():
            (last,) = db.execute(query, window).fetchone()
            if last:
                moment = datetime.datetime.fromisoformat(last).replace(tzinfo=datetime.UTC)
                out[table] = round(moment.timestamp() - begun, 3)
    return out


def add_rows_recorded(numbers: dict[str, Any]) -> None:
    """``rows_recorded_s`` (the latest of ``last_writes``) and the per-table times, once the
    server has settled after the run."""
    writes = last_writes(numbers)
    if writes:
        numbers["last_writes_s"] = writes
        numbers["rows_recorded_s"] = max(writes.values())


# -- (8) cached re-runs ---------------------------------------------------------------------


def _edit_one_leaf(folder: Path) -> Path:
    """Reword the instructions of one leaf deep in the tree (its answer stays the same)."""
    leaves = sorted(folder.glob("subtasks/**/instructions.md"))
    target = leaves[len(leaves) // 2]
    target.write_text(target.read_text() + "\nReworded.\n")
    return target


def bench_cached_reruns(scratch: Path) -> dict[str, Any]:
    """(8) A re-run with nothing changed, and after editing one leaf, against the first run
    (zero model latency): the 200-task chain and the 1,000-task tree (tools called)."""
    meter = Meter()
    out: dict[str, Any] = {"name": "(8) cached re-runs, zero latency", "ok": True}
    shapes = {
        "chain_200": lambda: workflows.sequential_chain(scratch / "chain"),
        "tree_1000": lambda: trees.wide_tree(scratch / "tree"),
    }
    for label, make in shapes.items():
        folder = make()
        settle()
        first, _ = run_folpipe(folder, meter, fresh=True)
        settle()
        cached, result = run_folpipe(folder, meter)
        settle()
        through_prefect, _ = run_folpipe(folder, meter, restore=False)
        edited_file = _edit_one_leaf(folder)
        settle()
        edited, edited_result = run_folpipe(folder, meter)
        reran = [row["path"] for row in edited_result.tasks if row["status"] == "completed"]
        out[label] = {
            "first": first,
            "cached": cached,
            "cached_through_prefect": through_prefect,
            "one_leaf_edited": edited,
            "edited": str(edited_file.relative_to(folder)),
            "rerun_after_edit": reran,
            "cached_vs_first": _ratio(cached, first),
            "cached_through_prefect_vs_first": _ratio(through_prefect, first),
            "edited_vs_first": _ratio(edited, first),
        }
        out["ok"] = out["ok"] and {row["status"] for row in result.tasks} <= {"cached"}
    return out


# -- (9) big trees against hand-written flows -----------------------------------------------


def _storage(scratch: Path) -> str:
    return str(scratch / "hand" / ".folpipe" / "results")


_REPETITIONS: Counter[str] = Counter()


def side_by_side(
    scenario: str, runs: dict[str, Callable[[], Any]], warm_up: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Each run once, settled apart, in the given order on a scenario's odd repetitions and
    reversed on its even ones (``--repeat 2``: A B C D, then D C B A): a SQLite server records a
    later run into a bigger database and the first into a colder process, so one fixed order
    favours one side. Before a scenario's first repetition the ``warm_up`` run goes once,
    unmeasured, so the first run measured does not meet a server that has recorded nothing of
    that size yet (the 12-02 batch's 1.72x: folpipe first on a new PostgreSQL cluster).
    With ``--fresh-db`` (``fresh_server``) every run meets the database as the warm-up left it.
    On a SQLite server each run is followed by a settle and ``add_rows_recorded`` (which is
    then the next run's settle too, unless the database is restored in between)."""
    fresh = fresh_server.server()
    if not _REPETITIONS[scenario]:
        if warm_up is not None:
            settle()
            runs[warm_up]()
        if fresh is not None:
            settle()
            fresh.snapshot(scenario)
    order = list(runs)
    if _REPETITIONS[scenario] % 2:
        order.reverse()
    _REPETITIONS[scenario] += 1
    done: dict[str, Any] = {}
    rows = fresh_server.database() is not None
    settled = False  # by the last run's read of its rows
    for key in order:
        if fresh is not None:
            fresh.restore(scenario)
        if fresh is not None or not settled:
            settle()
        done[key] = runs[key]()
        if rows:  # read the run's last writes once it has settled, before any restore
            settle()
            add_rows_recorded(done[key][0] if isinstance(done[key], tuple) else done[key])
            settled = True
    return {key: done[key] for key in runs}, order


def _against_hand(
    scenario: str, name: str, folder: Path, scratch: Path, hand: Callable[[str, bool], Any]
) -> tuple[dict[str, Any], Any]:
    """folpipe's run of ``folder`` and the hand-written flow ``hand(storage, logged)`` doing
    the same work, the same logging too, and bare (no storage), side by side."""
    meter, storage = Meter(), _storage(scratch)
    runs, order = side_by_side(
        scenario,
        {
            "folpipe": lambda: run_folpipe(folder, meter, fresh=True),
            "same": lambda: run_hand(lambda: hand(storage, False), meter),
            "logged": lambda: run_hand(lambda: hand(storage, True), meter),
            "bare": lambda: run_hand(lambda: hand("", False), meter),
        },
        warm_up="bare",
    )
    (folpipe, result), same, logged, bare = (
        runs["folpipe"],
        runs["same"],
        runs["logged"],
        runs["bare"],
    )
    return {
        "name": name,
        "order": order,
        "folpipe": folpipe,
        "hand_same_work": same,
        "hand_same_work_logged": logged,
        "hand_bare": bare,
        "folpipe_vs_same_work": _ratio(folpipe, same),
        "folpipe_vs_same_work_logged": _ratio(folpipe, logged),
        "folpipe_vs_bare": _ratio(folpipe, bare),
        "ok": result.status == "completed",
    }, result


def bench_wide_tree(scratch: Path) -> dict[str, Any]:
    """(9) 10 branches x 99 leaves, each leaf calls a tool: folpipe vs the hand-written flow
    doing the same work (a parent task run per branch, persisted results, a report per
    leaf) and the bare one, zero model latency."""
    outcome, result = _against_hand(
        "9",
        "(9) 1,000-task tree (10 x 99, tools called), zero latency",
        trees.wide_tree(scratch / "tree"),
        scratch,
        lambda storage, logged: handwritten.wide_tree_same_work(10, 99, 0.0, storage, logged),
    )
    outcome["tool_calls"] = sum(row["tool_calls"] for row in result.tasks)
    return outcome


def bench_wide_group(scratch: Path, count: int = 500) -> dict[str, Any]:
    """(10) One parallel group of 500 leaves: folpipe vs hand-written (same work, bare)."""
    outcome, _ = _against_hand(
        "10",
        f"(10) {count}-wide parallel group, zero latency",
        trees.wide_group(scratch / "group", count),
        scratch,
        lambda storage, logged: handwritten.wide_group_same_work(count, 0.0, storage, logged),
    )
    return outcome


def bench_nesting(scratch: Path, depth: int = 200) -> dict[str, Any]:
    """(11) 200 levels of nesting run (a branch run per level and a leaf at the bottom)."""
    meter = Meter()
    folder = trees.nested(scratch / "nested", depth)
    settle()
    numbers, result = run_folpipe(folder, meter, fresh=True)
    error = str(result.error)[:300] if result.error else None
    return {
        "name": f"(11) {depth} levels of nesting",
        "folpipe": numbers,
        "status": result.status,
        "error": error,
        "ok": result.status == "completed",
    }


# -- (12) per-task overhead -----------------------------------------------------------------


def bench_overhead(scratch: Path, count: int = 200) -> dict[str, Any]:
    """(12) What one task costs, from the 200-task chain at zero latency: a bare Prefect task
    run, a persisted result (checkpoint), a markdown artifact written inline, and folpipe's
    own work (folpipe without artifacts minus the checkpointed hand-written flow)."""
    meter = Meter()
    folder = workflows.sequential_chain(scratch / "chain", count)
    storage = _storage(scratch)
    rows: dict[str, dict[str, float]] = {}
    runs: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("hand_bare", lambda: run_hand(lambda: handwritten.sequential_chain(count), meter)),
        (
            "hand_checkpointed",
            lambda: run_hand(
                lambda: handwritten.sequential_chain_checkpointed(count, storage), meter
            ),
        ),
        (
            "hand_same_work",
            lambda: run_hand(lambda: handwritten.sequential_chain_same_work(count, storage), meter),
        ),
        (
            "folpipe_no_artifacts",
            lambda: run_folpipe(folder, meter, fresh=True, artifacts="none")[0],
        ),
        ("folpipe_defaults", lambda: run_folpipe(folder, meter, fresh=True)[0]),
    ]
    for label, go in runs:
        settle()
        rows[label] = go()

    def per_task(a: str, b: str | None = None) -> dict[str, float]:
        base = rows[b] if b else {"wall_s": 0.0, "cpu_s": 0.0, "server_cpu_s": 0.0}
        return {
            key: round((rows[a][key] - base[key]) / count * 1000, 2)
            for key in ("wall_s", "cpu_s", "server_cpu_s")
        }

    return {
        "name": f"(12) per-task overhead ({count}-task chain, zero latency), ms per task",
        "runs": rows,
        "prefect_task_run_ms": per_task("hand_bare"),
        "checkpoint_write_ms": per_task("hand_checkpointed", "hand_bare"),
        "artifact_inline_ms": per_task("hand_same_work", "hand_checkpointed"),
        "folpipe_own_work_ms": per_task("folpipe_no_artifacts", "hand_checkpointed"),
        "folpipe_artifacts_ms": per_task("folpipe_defaults", "folpipe_no_artifacts"),
        "ok": True,
    }


# -- (13) cold start with a running server vs the temporary one -----------------------------


def _cold(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def bench_cold_server(scratch: Path, repeats: int = 3) -> dict[str, Any]:
    """(13) ``folpipe run --json`` of a one-task workflow in a new process: against a running
    server (``PREFECT_API_URL``) and with the temporary one it starts itself."""
    sys.path.insert(0, str(HERE.parent))
    from tests.deploy.server import start_server  # type: ignore[import-not-found]

    folder = workflows.one_task(scratch / "one")
    cmd = [sys.executable, "-m", "prefect_folpipe", "run", str(folder), "--json", "--fresh"]
    server = start_server()
    try:
        running_env = dict(server.env)
        temporary_env = {k: v for k, v in running_env.items() if k != "PREFECT_API_URL"}
        temporary_env["PREFECT_HOME"] = str(scratch / "temporary-home")
        running, temporary = [], []
        for _ in range(repeats):  # interleaved: load changes hit both alike
            settle()
            running.append(_cold(cmd, running_env))
            settle()
            temporary.append(_cold(cmd, temporary_env))
    finally:
        server.stop()
    median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
    return {
        "name": "(13) cold start of `folpipe run`: running server vs temporary server",
        "running_server_s": median(running),
        "temporary_server_s": median(temporary),
        "running_runs_s": running,
        "temporary_runs_s": temporary,
        "ok": True,
    }


# -- memory ---------------------------------------------------------------------------------


def peak_rss_mb(shape: str, scratch: Path) -> float:
    """Peak resident memory (MB) of a new process running one folpipe run of ``shape``
    (``tree``, ``group``; ``hand_tree``: the hand-written flow doing the tree's work) against
    the same API as this process (its own temporary server
    when there is none: that server's memory is not counted). The peak is the kernel's
    ``VmHWM`` of the process's own memory: ``ru_maxrss`` would report this (large) process's
    size, which a child forked from it inherits across ``exec``."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import trees; "
        "from pathlib import Path; from prefect_folpipe.compile import run_workflow; "
        "import asyncio, handwritten; from types import SimpleNamespace as NS; "
        "hand = lambda p: asyncio.run(handwritten.wide_tree_same_work(10, 99, 0.0, str(p))); "
        "runs = {'tree': lambda p: run_workflow(trees.wide_tree(p), fresh=True), "
        "'group': lambda p: run_workflow(trees.wide_group(p), fresh=True), "
        "'hand_tree': lambda p: [hand(p), NS(status='completed')][1]}; "
        "result = runs[sys.argv[2]](Path(sys.argv[3])); "
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]; "
        "print(result.status, hwm.split()[1])"
    )
    env = dict(os.environ)
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")  # a loaded machine
    done = subprocess.run(
        [sys.executable, "-c", code, str(HERE), shape, str(scratch / f"rss-{shape}")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    words = done.stdout.split()
    if len(words) < 2 or not words[-1].isdigit():  # the run's own error, not Prefect's noise
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        raise RuntimeError(f"exit {done.returncode}: {errors[-3:] or done.stderr[-800:]}")
    status, kilobytes = words[-2:]
    if status != "completed":
        raise RuntimeError(f"the {shape} run {status}")
    return round(int(kilobytes) / 1024, 1)


def bench_memory(scratch: Path) -> dict[str, Any]:
    """(14) Peak memory of a folpipe process running the 1,000-task tree and the 500 group."""
    peaks: dict[str, Any] = {}
    for shape in ("tree", "group", "hand_tree"):
        settle()
        try:
            peaks[shape] = peak_rss_mb(shape, scratch)
        except RuntimeError as exc:  # keep the other shapes' numbers
            peaks[shape] = f"failed: {exc}"
    measured = [peaks[s] for s in ("tree", "group") if isinstance(peaks[s], float)]
    return {
        "name": "(14) peak memory of the run process (MB)",
        "hand_tree_1000_mb": peaks["hand_tree"],
        "tree_1000_mb": peaks["tree"],
        "group_500_mb": peaks["group"],
        "ok": len(measured) == 2 and max(measured) <= 300,
    }


def dump(value: Any) -> str:
    return json.dumps(value, default=float)
