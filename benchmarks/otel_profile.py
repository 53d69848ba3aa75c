"""What tracing costs per task, by cProfile: the 200-task chain once with export on and once
off (``python -m benchmarks.otel_cost --profile``), each in a warm process of its own, every
thread profiled (the task runner's and the span exporter's too) by its CPU time (a wait for a
lock or a socket costs nothing; the machine's other load hardly matters). The report sums the
functions' own CPU time by where they live, on minus off, per task, and lists the costliest
functions of the tracing groups."""

from __future__ import annotations

import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import server, workflows
from benchmarks.otel_cost import Drain, run_once

TASKS = 200
GROUPS = {
    "folpipe telemetry": ("prefect_folpipe/telemetry/",),
    "redaction": ("prefect_folpipe/redaction.py",),
    "opentelemetry": ("/opentelemetry/",),
    "prefect telemetry": ("/prefect/telemetry/",),
}
TRACING = ("folpipe telemetry", "opentelemetry", "prefect telemetry")


def _profile_all_threads() -> list[cProfile.Profile]:
    """Start a profiler in every thread started from now on (and in this one)."""
    profiles: list[cProfile.Profile] = []

    def start(*_args: Any) -> None:
        sys.setprofile(None)
        found = cProfile.Profile(time.thread_time)  # CPU time: a wait costs nothing
        profiles.append(found)
        found.enable()

    threading.setprofile(start)
    start()
    return profiles


def child(scratch: Path, out: Path) -> None:
    """Warm up, then profile one run of the chain; the merged stats go to ``out``."""
    chain = workflows.sequential_chain(scratch / "chain", TASKS)
    run_once(workflows.one_task(scratch / "warm-up"))
    profiles = _profile_all_threads()
    print(run_once(chain), flush=True)
    threading.setprofile(None)  # type: ignore[arg-type]
    stats = pstats.Stats(profiles[0])
    for other in profiles[1:]:
        stats.add(other)
    stats.dump_stats(out)


def group_of(filename: str) -> str:
    for group, parts in GROUPS.items():
        if any(part in filename for part in parts):
            return group
    return "everything else"


def own_time(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of the functions' own time, by group."""
    found: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        group = group_of(filename)
        found[group] = found.get(group, 0.0) + tottime
    return found


def profile() -> None:
    """Profile the chain on and off; print the per-task difference by group."""
    drain, prefect = Drain(), server.start()
    stats: dict[str, pstats.Stats] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="folpipe-otel-profile-") as scratch:
            for mode in ("off", "on"):
                env = {
                    k: v
                    for k, v in os.environ.items()
                    if not k.startswith(("OTEL_", "PREFECT_API"))
                }
                env |= {"PREFECT_API_URL": prefect.url, "PREFECT_LOGGING_LEVEL": "WARNING"}
                if mode == "on":
                    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = drain.endpoint
                folder, out = Path(scratch) / mode, Path(scratch) / f"{mode}.prof"
                folder.mkdir()
                done = subprocess.run(
                    [sys.executable, "-m", "benchmarks.otel_profile", str(folder), str(out)],
                    cwd=Path(__file__).parent.parent, env=env, capture_output=True, text=True,
                    timeout=1800, check=False,
                )  # fmt: skip
                if done.returncode != 0:
                    raise SystemExit(done.stderr[-3000:])
                print(mode, done.stdout.strip().splitlines()[-1])
                stats[mode] = pstats.Stats(str(out))
    finally:
        prefect.stop()
    report(stats["off"], stats["on"])


def report(off: pstats.Stats, on: pstats.Stats) -> None:
    before, after = own_time(off), own_time(on)
    print(f"\nown CPU time by group, seconds (per task, ms), the {TASKS}-task chain:")
    for group in [*GROUPS, "everything else"]:
        b, a = before.get(group, 0.0), after.get(group, 0.0)
        print(f"  {group:18} off {b:7.2f}  on {a:7.2f}  on-off {a - b:+7.2f} "
              f"({(a - b) / TASKS * 1000:+.2f} ms/task)")  # fmt: skip
    tracing = sum(after.get(g, 0.0) - before.get(g, 0.0) for g in TRACING)
    print(f"  tracing groups together: {tracing / TASKS * 1000:.2f} ms per task")
    print("\ncostliest functions of the tracing groups, export on (own time, calls):")
    rows = [
        (tottime, calls, f"{Path(filename).name}:{line} {name}")
        for (filename, line, name), (_, calls, tottime, _, _) in on.stats.items()  # type: ignore[attr-defined]
        if group_of(filename) in (*TRACING, "redaction")
    ]
    for tottime, calls, where in sorted(rows, reverse=True)[:25]:
        print(f"  {tottime:7.3f} s {calls:8d}  {where}")


if __name__ == "__main__":
    child(Path(sys.argv[1]), Path(sys.argv[2]))
