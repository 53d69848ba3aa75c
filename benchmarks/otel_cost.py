"""The cost of tracing: scenario (3), the 200-task chain, and scenario (1), the 50-wide
group (1 s latency), with OpenTelemetry export on (OTLP/HTTP to a local receiver) and off.

A tracer provider is global to its process, so each measurement is a process of its own: a
child with its own ephemeral Prefect server runs a warm-up, then the chain and the group
(``SETTLE_S`` apart), with or without
``OTEL_EXPORTER_OTLP_ENDPOINT``. The receiver, in this process, answers every export and counts
the spans' bytes; the run's time includes the flush of its spans at its end.

    .venv/bin/python -m benchmarks.otel_cost --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks import workflows

SETTLE_S = float(os.environ.get("BENCH_SETTLE_S", "12"))


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


def child(scratch: Path) -> None:
    """Warm up, then time the chain and the group; print the seconds as JSON."""
    from prefect_folpipe.compile import RunOptions, flush_artifacts, run_workflow

    def timed(path: Path) -> float:
        started = time.perf_counter()
        result = run_workflow(path, options=RunOptions(fresh=True))
        seconds = time.perf_counter() - started
        assert result.status == "completed", result.error
        flush_artifacts(60)
        return seconds

    timed(workflows.one_task(scratch / "warm-up"))
    time.sleep(SETTLE_S)
    chain = timed(workflows.sequential_chain(scratch / "chain", 200))
    time.sleep(SETTLE_S)
    group = timed(workflows.parallel_leaves(scratch / "group", 50, 1.0))
    print(json.dumps({"chain_s": round(chain, 3), "group_s": round(group, 3)}))


def measure(traced: bool, drain: Drain) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="folpipe-otel-bench-") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PREFECT_API"))}
        env |= {"PREFECT_HOME": str(Path(scratch) / "home"), "PREFECT_LOGGING_LEVEL": "WARNING"}
        env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
        if traced:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = drain.endpoint
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.otel_cost", "--child", scratch],
            cwd=Path(__file__).parent.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    drain = Drain()
    rows: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for repetition in range(args.repeat):
        order = ("off", "on") if repetition % 2 == 0 else ("on", "off")
        for mode in order:
            before = drain.bytes
            row = measure(mode == "on", drain)
            row["exported_kb"] = round((drain.bytes - before) / 1024, 1)
            rows[mode].append(row)
            print(mode, row, flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
