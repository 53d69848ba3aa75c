"""The cost of tracing: scenario (3), the 200-task chain, and scenario (1), the 50-wide group
(1 s latency), with OpenTelemetry export on (OTLP/HTTP to a local receiver) and off.

A tracer provider is global to its process, so the two modes are a **pair of processes**,
each warmed up once and kept for the whole measurement, one exporting to the receiver in this
process (``OTEL_EXPORTER_OTLP_ENDPOINT``) and one not, both against one ``prefect server`` of
the benchmark's own. Their runs **alternate** (off, on, on, off, ...: a drift of the machine's
load hits both modes alike), each after the server settled from the last one
(``measure.settle``), and the **best of N** of each mode is compared: ``ratio`` is best on /
best off, for the wall time and for the run process's CPU time (user + system, its exporter
thread included), which a busy machine disturbs less. A run's wall time ends when
``run_workflow`` returns (its last spans are then still being sent by the exporter's thread,
or at the process's exit); its CPU time includes a flush of those spans right after it.

    .venv/bin/python -m benchmarks.otel_cost --repeat 5
    .venv/bin/python -m benchmarks.otel_cost --profile     # cProfile: the chain, on vs off
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from benchmarks import measure, server, workflows

SCENARIOS = {
    "chain": lambda root: workflows.sequential_chain(root, 200),
    "group": lambda root: workflows.parallel_leaves(root, 50, 1.0),
}
MARK = "@@otel-cost "
"""Prefix of the lines a child answers with (Prefect may print on the same stream)."""


class Drain:
    """An OTLP/HTTP endpoint that accepts every export (and counts what it got)."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        drain = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                drain.requests += 1
                drain.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_once(folder: Path) -> dict[str, float]:
    """One fresh run of ``folder`` in this process: its wall seconds (until ``run_workflow``
    returns), then the seconds a flush of the spans still queued took (what the exporter's
    thread sends after the run, or the process at its exit), and the CPU seconds of both."""
    from prefect_folpipe import telemetry
    from prefect_folpipe.compile import RunOptions, flush_artifacts, run_workflow

    cpu, started = _cpu_s(), time.perf_counter()
    result = run_workflow(folder, options=RunOptions(fresh=True))
    wall = time.perf_counter() - started
    telemetry.flush()
    flushed, cpu = time.perf_counter() - started - wall, _cpu_s() - cpu
    if result.status != "completed":
        raise RuntimeError(f"{folder.name}: {result.status}: {result.error}")
    flush_artifacts(60)
    return {"wall_s": round(wall, 3), "flush_s": round(flushed, 3), "cpu_s": round(cpu, 3)}


def child(scratch: Path) -> None:
    """Build the folders, warm up, then run each scenario named on stdin; answer on stdout."""
    folders = {name: build(scratch / name) for name, build in SCENARIOS.items()}
    run_once(workflows.one_task(scratch / "warm-up"))
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        print(MARK + json.dumps(run_once(folders[line.strip()])), flush=True)


class Child:
    """One of the pair: a warm process that runs a scenario when asked."""

    def __init__(self, mode: str, api_url: str, drain: Drain, scratch: Path) -> None:
        self.mode = mode
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PREFECT_API"))}
        env |= {"PREFECT_API_URL": api_url, "PREFECT_LOGGING_LEVEL": "WARNING"}
        env |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        if mode == "on":
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = drain.endpoint
        folder = scratch / mode
        folder.mkdir()
        self.log = (folder / "child.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.otel_cost", "--child", str(folder)],
            cwd=Path(__file__).parent.parent, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
        )  # fmt: skip
        self.answer()

    def answer(self) -> dict[str, Any]:
        out: IO[str] = self.process.stdout  # type: ignore[assignment]
        for line in out:
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])  # type: ignore[no-any-return]
        self.log.flush()
        raise SystemExit(
            f"the {self.mode} process ended: {Path(self.log.name).read_text()[-3000:]}"
        )

    def run(self, scenario: str) -> dict[str, Any]:
        self.process.stdin.write(scenario + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self.answer()

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait(timeout=120)
        self.log.close()


def summary(rows: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, Any]:
    """Per scenario: the best of each mode, and on / off for wall and CPU time."""
    found: dict[str, Any] = {}
    for scenario in SCENARIOS:
        best = {
            mode: {
                key: min(row[key] for row in rows[mode][scenario]) for key in ("wall_s", "cpu_s")
            }
            for mode in ("off", "on")
        }
        found[scenario] = {
            "best_off": best["off"],
            "best_on": best["on"],
            "ratio_wall": round(best["on"]["wall_s"] / best["off"]["wall_s"], 3),
            "ratio_cpu": round(best["on"]["cpu_s"] / best["off"]["cpu_s"], 3),
        }
    return found


def compare(repeat: int) -> dict[str, Any]:
    """The alternating best-of-``repeat`` measurement (see the module docstring)."""
    drain = Drain()
    prefect = server.start()
    measure.SETTLE.server_pid = prefect.process.pid
    measure.SETTLE.pause_s = float(os.environ.get("BENCH_SETTLE_S", "5"))
    load_before = os.getloadavg()
    rows: dict[str, dict[str, list[dict[str, float]]]] = {
        mode: {name: [] for name in SCENARIOS} for mode in ("off", "on")
    }
    try:
        with tempfile.TemporaryDirectory(prefix="folpipe-otel-bench-") as scratch:
            pair = {mode: Child(mode, prefect.url, drain, Path(scratch)) for mode in ("off", "on")}
            for repetition in range(repeat):
                for scenario in SCENARIOS:
                    order = ("off", "on") if repetition % 2 == 0 else ("on", "off")
                    for mode in order:
                        measure.settle()
                        before = drain.bytes
                        row = pair[mode].run(scenario)
                        row["exported_kb"] = round((drain.bytes - before) / 1024, 1)
                        rows[mode][scenario].append(row)
                        print(repetition, scenario, mode, row, flush=True)
            for process in pair.values():
                process.close()
    finally:
        prefect.stop()
    return {
        "repeat": repeat,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
        "summary": summary(rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per mode and scenario")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="cProfile the chain, on vs off")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if args.profile:
        from benchmarks.otel_profile import profile

        profile()
        return
    found = compare(args.repeat)
    print(json.dumps(found["rows"]))
    print(json.dumps({k: v for k, v in found.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
