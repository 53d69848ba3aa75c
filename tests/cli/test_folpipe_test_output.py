"""``folpipe test`` on a terminal: the table and one line saying where Prefect's run logs went;
``-v`` shows them; flow runs are tagged ``folpipe-test``; an expected failure is not an ERROR."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from prefect_folpipe.cli.testing._logs import TEST_TAG, ConsoleToFile, expected_failures, log_file

CASES = [
    {"name": "all good", "models": {"default": "ok"}, "expect": {"status": "completed"}},
    {
        "name": "b fails as expected",
        "models": {"a": ["ok"], "b": [{"error": "auth"}]},
        "expect": {"status": "failed", "failed": ["b"]},
    },
]


def two_steps(root: Path, name: str) -> Path:
    files = {
        "task.yaml": {
            "name": name,
            "providers": {"default": "scripted"},
            "subtasks": {"execution_type": "sequential"},
        },
        "subtasks/10_a/instructions.md": "Do a.",
        "subtasks/20_b/instructions.md": "Do b.",
        "tests.yaml": {"cases": CASES},
    }
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return root


def folpipe_test(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", "test", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**cli_env, "PREFECT_LOGGING_LEVEL": "INFO", "TMPDIR": str(tmp_path)}


@pytest.mark.prefect
def test_the_terminal_shows_the_table_and_where_the_logs_are(cli_env, tmp_path):
    name = f"quiet-{os.getpid()}"
    folder = two_steps(tmp_path / "wf", name)
    done = folpipe_test(_env(cli_env, tmp_path), folder)
    assert done.returncode == 0, done.stdout + done.stderr
    logs = tmp_path / f"folpipe-test-{name}.log"
    assert done.stderr.strip() == f"Prefect's run logs: {logs} (-v shows them here)"
    assert "| INFO" not in done.stdout and "| ERROR" not in done.stdout
    assert "2 passed, 0 failed" in done.stdout
    text = logs.read_text()
    assert "Beginning flow run" in text
    failed = [line for line in text.splitlines() if "Finished in state Failed" in line]
    assert len(failed) == 2  # task b, then the flow run: both expected by the case
    assert all("| INFO " in line for line in failed), failed


@pytest.mark.prefect
def test_verbose_shows_the_logs_and_runs_are_tagged(cli_env, tmp_path, prefect_harness):
    name = f"loud-{os.getpid()}"
    folder = two_steps(tmp_path / "wf", name)
    done = folpipe_test(_env(cli_env, tmp_path), folder, "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Beginning flow run" in done.stderr
    assert "Prefect's run logs" not in done.stderr
    assert not (tmp_path / f"folpipe-test-{name}.log").exists()
    assert "| ERROR" not in done.stderr  # the failure the case expects
    tags = _tags_of_runs(name)
    assert len(tags) == 2 and all(TEST_TAG in run for run in tags), tags


def _tags_of_runs(flow_name: str) -> list[list[str]]:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async def read() -> list[list[str]]:
        async with get_client() as client:
            runs = await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name]))
            )
            return [sorted(run.tags) for run in runs]

    return asyncio.run(read())


def test_console_handlers_go_to_the_file_and_come_back(tmp_path):
    logger = logging.getLogger("folpipe-test-probe")
    logger.propagate = False
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter("%(levelname)s | %(message)s"))
    logger.addHandler(console)
    try:
        redirect = ConsoleToFile(tmp_path / "t.log")
        redirect.swap()
        assert console not in logger.handlers
        logger.warning("into the file")
        redirect.restore()
        assert console in logger.handlers
        assert (tmp_path / "t.log").read_text() == "WARNING | into the file\n"
    finally:
        logger.removeHandler(console)


def test_only_what_the_case_expects_to_fail_is_lowered():
    def record(name: str, msg: str, level: int = logging.ERROR, **extra: str) -> logging.LogRecord:
        rec = logging.LogRecord(name, level, __file__, 1, msg, None, None)
        rec.__dict__.update(extra)
        logging.getLogger(name).filter(rec)
        return rec

    with expected_failures({"status": "failed", "failed": ["b"]}):
        task_b = record("prefect.task_runs", "Finished in state Failed()", task_run_name="x/b[2]")
        task_c = record("prefect.task_runs", "Finished in state Failed()", task_run_name="c")
        flow = record("prefect.flow_runs", "Finished in state Failed()", flow_run_name="r")
        other = record("prefect.task_runs", "boom", task_run_name="b")
    assert (task_b.levelname, flow.levelname) == ("INFO", "INFO")
    assert (task_c.levelname, other.levelname) == ("ERROR", "ERROR")
    outside = record("prefect.flow_runs", "Finished in state Failed()", flow_run_name="r")
    assert outside.levelname == "ERROR"


def test_the_log_file_is_named_after_the_workflow():
    assert log_file("My Flow").name.startswith("folpipe-test-")
    assert log_file("My Flow").suffix == ".log"
