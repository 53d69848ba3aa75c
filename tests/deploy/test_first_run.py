"""The README's first command as a user meets it: a fresh PREFECT_HOME, Prefect's default
settings (no raised start-up timeout, no PREFECT_API_URL), so each process starts a temporary
server whose first start migrates a new database.

* it works the first time, says so in one line, and ends without a traceback (point 1);
* the temporary server records every task run's final state before it stops, so the API
  (read back with ``folpipe status --json``) agrees with the run's own report (point 2);
* the Python API (``run_workflow``, ``folder_to_flow(...)()``) starts it the same way,
  without telemetry unless the user chose it
  (in a home whose database is migrated already: the first start is the first test's);
* a server that does not start is FP523 with the hint, exit code 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.infra._server import STARTING_LINE

from .server import FOLPIPE

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "research_report"
NOISE = ("Traceback", "Error flushing", "ERROR", "Starting temporary server")

pytestmark = [pytest.mark.server, pytest.mark.timeout(600)]


def user_env(home: Path) -> dict[str, str]:
    """What a user's shell has: no Prefect settings, Prefect's defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FOLPIPE_"))}
    env["PREFECT_HOME"] = str(home)  # analytics as Prefect ships them: folpipe's server sends none
    return env


def folpipe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FOLPIPE, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    """One starting line at most, and none of Prefect's tracebacks or flush errors."""
    output = done.stdout + done.stderr
    assert output.count(STARTING_LINE) <= 1, output
    for noise in NOISE:
        assert noise not in output, f"{noise!r} in:\n{output[-4000:]}"


def expected_task_runs(report: dict[str, Any]) -> dict[str, str]:
    """The task runs a run's report implies: ``{name: state}`` (a loop child runs once per
    iteration as ``path[i]``; a branch is one task run, Cached when all below it were)."""
    rows = [row for row in report["tasks"] if row["path"]]
    paths = [row["path"] for row in rows]
    states = {"completed": "Completed", "cached": "Cached", "failed": "Failed"}
    expected: dict[str, str] = {}
    for row in rows:
        branch = any(other.startswith(row["path"] + "/") for other in paths)
        looped = row["iterations"] and not branch
        names = [f"{row['path']}[{i}]" for i in range(1, row["iterations"] + 1)] if looped else []
        for name in names or [row["path"]]:
            expected[name] = states[row["status"]]
    return expected


def test_the_first_run_works_and_the_api_agrees_with_the_report(tmp_path: Path) -> None:
    workflow = tmp_path / "research_report"
    shutil.copytree(EXAMPLE, workflow, ignore=shutil.ignore_patterns(".folpipe"))
    env = user_env(tmp_path / "prefect-home")

    first = folpipe(env, "run", str(workflow), "--json")
    assert first.returncode == 0, first.stderr[-4000:]
    assert first.stderr.count(STARTING_LINE) == 1
    assert_clean(first)
    report = json.loads(first.stdout)
    assert report["status"] == "completed" and report["usage"]["model_calls"] > 0

    again = folpipe(env, "run", str(workflow))  # as the README runs it, second time
    assert again.returncode == 0, again.stderr[-4000:]
    assert_clean(again)
    total = len(report["tasks"])
    assert f"{total} of {total} tasks from checkpoints (--fresh to re-run)" in again.stdout
    second_id = re.search(r"flow run ([0-9a-f-]{36})", again.stdout).group(1)  # type: ignore[union-attr]

    status = folpipe(env, "status", str(workflow), "--json")
    assert status.returncode == 0, status.stderr[-4000:]
    assert_clean(status)
    runs = {run["flow_run_id"]: run for run in json.loads(status.stdout)["runs"]}
    assert runs[report["flow_run_id"]]["task_runs"] == expected_task_runs(report)
    # a fully cached re-run is restored as one Cached task run listing every task (issue 15)
    second = runs[second_id]
    assert second["task_runs"] and set(second["task_runs"].values()) == {"Cached"}
    assert second["tasks"]["cached"] == second["tasks"]["total"] == total  # one per task


PYTHON_API = """
import json, sys
from pathlib import Path
from prefect.server.api.server import SubprocessASGIServer
from prefect_folpipe import folder_to_flow, run_workflow
result = run_workflow(sys.argv[1])
final = folder_to_flow(sys.argv[1])(context={"topic": "the python api"})
pid = SubprocessASGIServer().server_process.pid
analytics = sorted(v.decode() for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\\0")
                   if v.startswith(b"PREFECT_SERVER_ANALYTICS"))
print(json.dumps({"status": result.status, "topic": final["topic"], "server": analytics}))
"""


NEEDS_PROC = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


@NEEDS_PROC
def test_the_python_api_starts_the_server_the_same_way(
    tmp_path: Path, migrated_home: Callable[[Path], Path]
) -> None:
    """A home whose database is migrated already (the first start's migration is the first
    test's): the temporary server is started, announced once and reused by the second run.
    The user set nothing about telemetry, so the server runs without it."""
    workflow = tmp_path / "research_report"
    shutil.copytree(EXAMPLE, workflow, ignore=shutil.ignore_patterns(".folpipe"))
    home = migrated_home(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", PYTHON_API, str(workflow)],
        env=user_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout) == {
        "status": "completed",
        "topic": "the python api",
        "server": ["PREFECT_SERVER_ANALYTICS_ENABLED=false"],
    }
    assert done.stderr.count(STARTING_LINE) == 1  # the second run reuses the server
    assert_clean(done)


def test_a_server_that_does_not_start_is_a_coded_error(tmp_path: Path) -> None:
    """With ``--json`` and without, side by side (a home each: their waits overlap)."""
    runs = {}
    for mode, extra in (("json", ["--json"]), ("plain", [])):
        env = user_env(tmp_path / f"home-{mode}")
        env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "1"  # the user's own choice
        runs[mode] = subprocess.Popen(
            [FOLPIPE, "run", str(EXAMPLE), *extra], env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
    (out, json_err), (_, err) = (runs[mode].communicate(timeout=300) for mode in ("json", "plain"))
    for stderr in (json_err, err):
        assert "Traceback" not in stderr and "Aborted!" not in stderr, stderr[-4000:]
        assert "can't register atexit" not in stderr, stderr[-4000:]
    assert runs["json"].returncode == 1
    error = json.loads(out)["error"]
    assert error["code"] == "FP523"
    assert "did not answer within 1 s" in error["message"]
    assert "PREFECT_API_URL" in error["hint"]
    assert runs["plain"].returncode == 1
    assert "error FP523" in err


SERVER_ENV = """
from pathlib import Path
from prefect.server.api.server import SubprocessASGIServer
from prefect_folpipe.compile.infra._server import ensure_api
ensure_api()
pid = SubprocessASGIServer().server_process.pid
print(sorted(v for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\\0")
             if v.startswith(b"PREFECT_SERVER_ANALYTICS")))
"""


@NEEDS_PROC
def test_the_temporary_server_sends_telemetry_when_the_user_chose_it(
    tmp_path: Path, migrated_home: Callable[[Path], Path]
) -> None:
    """Its telemetry service wrote the database during the first start's migration and
    printed "database is locked" tracebacks into the terminal, so folpipe starts it without
    (``test_the_python_api_starts_the_server_the_same_way``), unless the user chose it. What
    the server process is started with is the same on any start: the home gets a database
    migrated already (the first start itself is the first test's)."""
    env = user_env(migrated_home(tmp_path / "home"))
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "true"
    done = subprocess.run(
        [sys.executable, "-c", SERVER_ENV],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().lower() == "[b'prefect_server_analytics_enabled=true']"
