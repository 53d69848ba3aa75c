"""Run records and which run ``resume`` takes (issue 11 point 9), without Prefect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from builders import make_task, workflow_around

from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.compile.report._records import RunResult, RunTracker
from prefect_folpipe.compile.report._runs import (
    RunRecord,
    list_runs,
    peek_status,
    process_alive,
    resumable_run,
    settle_dead_runs,
    this_process,
    write_record,
)
from prefect_folpipe.errors import ProviderError


def _workflow(tmp_path: Path) -> Any:
    leaf = make_task("draft", "draft")
    return workflow_around(make_task("wf", "", instructions=None, children=[leaf]), tmp_path)


def _result(status: str) -> RunResult:
    row = {"path": "draft", "status": status}
    error = ProviderError("scripted auth error", kind="auth") if status == "failed" else None
    return RunResult(status, {}, [row], flow_run_id="f", error=error)  # type: ignore[arg-type]


def _dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    return int(child.stdout)


def test_a_record_is_written_at_the_start_and_rewritten_at_the_end(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    record = RunRecord.start(workflow, {"topic": "x"}, RunOptions(provider="scripted"), "f1")
    [running] = list_runs(tmp_path)
    assert running["status"] == "running" and running["pid"] == os.getpid()
    assert running["context"] == {"topic": "x"} and running["flow_run_id"] == "f1"
    assert process_alive(running) is True
    record.finish(_result("failed"))
    [ended] = list_runs(tmp_path)
    assert ended["status"] == "failed" and "FP320" in ended["error"]
    assert ended["tasks"] == [{"path": "draft", "status": "failed"}]
    assert not list((tmp_path / ".folpipe" / "runs").glob(".*partial"))  # atomic writes


def test_progress_is_recorded_while_the_run_goes_on(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("prefect_folpipe.compile.report._runs.PROGRESS_EVERY_S", 0)
    workflow = _workflow(tmp_path)
    record = RunRecord.start(workflow, {}, RunOptions(), "f1")
    tracker = RunTracker(workflow.tasks())
    record.follow(tracker)
    tracker.start("draft")
    tracker.finish("draft", "completed")
    [running] = list_runs(tmp_path)
    assert {"path": "draft", "status": "completed"} in running["tasks"]


def test_resume_takes_the_latest_unfinished_run_and_a_dead_running_one_is_crashed(
    tmp_path: Path,
) -> None:
    workflow = _workflow(tmp_path)
    older = RunRecord.start(workflow, {"n": 1}, RunOptions(), "older")
    older.finish(_result("failed"))
    crashed = RunRecord.start(workflow, {"n": 2}, RunOptions(), "killed")
    crashed.data.update(pid=_dead_pid(), process_started="1")
    crashed.save()

    chosen = resumable_run(tmp_path)
    assert chosen is not None and chosen["flow_run_id"] == "killed"
    assert chosen["status"] == "crashed" and chosen["context"] == {"n": 2}
    assert "died" in chosen["error"]


def test_a_live_run_is_left_alone_and_a_completed_resume_closes_its_run(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    failed = RunRecord.start(workflow, {"n": 1}, RunOptions(), "failed")
    failed.finish(_result("failed"))
    RunRecord.start(workflow, {"n": 2}, RunOptions(), "still-running")  # this very process
    assert resumable_run(tmp_path)["flow_run_id"] == "failed"  # type: ignore[index]

    resume = RunRecord.start(workflow, {"n": 1}, RunOptions(resumed_from=failed.name), "again")
    resume.finish(_result("completed"))
    assert json.loads(failed.path.read_text())["resumed_by"] == resume.name
    assert resumable_run(tmp_path) is None


def test_an_unfinished_run_is_superseded_by_a_later_completed_run_with_its_inputs(
    tmp_path: Path,
) -> None:
    workflow = _workflow(tmp_path)
    interrupted = RunRecord.start(workflow, {"n": 1}, RunOptions(provider="scripted"), "stopped")
    interrupted.end("interrupted", [], "the run was interrupted by SIGTERM")
    other = RunRecord.start(workflow, {"n": 9}, RunOptions(provider="scripted"), "other")
    other.finish(_result("completed"))
    assert resumable_run(tmp_path)["flow_run_id"] == "stopped"  # type: ignore[index]
    same = RunRecord.start(workflow, {"n": 1}, RunOptions(provider="scripted"), "same")
    same.finish(_result("completed"))
    assert resumable_run(tmp_path) is None


def test_a_record_from_another_host_or_a_reused_pid_is_judged_right() -> None:
    me = this_process()
    assert process_alive(me) is True
    assert process_alive({**me, "host": "elsewhere"}) is None
    assert process_alive({**me, "process_started": "1"}) is False  # the pid now is someone else
    assert process_alive({**me, "boot_id": "another-boot"}) is False


def _finished_records(tmp_path: Path, count: int) -> list[Path]:
    folder = tmp_path / ".folpipe" / "runs"
    files = []
    for index in range(count):
        file = folder / f"20260101T{index:06d}000000-done{index:02d}.json"
        write_record(file, {"status": "completed", "workflow": "wf", "tasks": []})
        files.append(file)
    return files


def test_a_run_start_reads_only_the_records_still_running(tmp_path: Path) -> None:
    """Finished records are told by their first bytes and not parsed: a start's search for
    dead runs costs the few still ``running``, however long the history."""
    finished = _finished_records(tmp_path, 30)
    for file in finished:  # what follows the status is never read: make it unreadable
        file.write_text(file.read_text()[:40] + "\x00 not json")
    workflow = _workflow(tmp_path)
    dead = RunRecord.start(workflow, {}, RunOptions(), "killed")
    dead.data.update(pid=_dead_pid(), process_started="1")
    dead.save()
    old_style = tmp_path / ".folpipe" / "runs" / "20250101T000000000000-oldstyle.json"
    write_record(old_style, {"workflow": "wf", **dead.data, "flow_run_id": "older"})

    assert peek_status(finished[0]) == "completed" and peek_status(old_style) is None
    assert [r["flow_run_id"] for r in list_runs(tmp_path, statuses=("running",))] == [
        "older",
        "killed",
    ]
    crashed = settle_dead_runs(tmp_path)
    assert sorted(r["flow_run_id"] for r in crashed) == ["killed", "older"]
    assert [r["status"] for r in list_runs(tmp_path)] == [
        "crashed",
        "crashed",
    ]  # the rest: unreadable


def test_old_records_go_when_a_run_ends_but_never_a_running_one(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("prefect_folpipe.compile.report._runs.KEEP_RUNS", 5)
    workflow = _workflow(tmp_path)
    live = tmp_path / ".folpipe" / "runs" / "20250101T000000000000-live00.json"
    write_record(live, {"status": "running", "workflow": "wf", **this_process()})
    finished = _finished_records(tmp_path, 8)
    record = RunRecord.start(workflow, {}, RunOptions(), "latest")
    record.finish(_result("completed"))
    left = sorted(p.name for p in (tmp_path / ".folpipe" / "runs").glob("*.json"))
    assert left == sorted([live.name, *(f.name for f in finished[-4:]), record.name])


def test_a_completed_run_that_is_not_durable_is_resumable(tmp_path: Path) -> None:
    """Issue 31 point 3: a run that completed but could not write a checkpoint (FP541)."""
    workflow = _workflow(tmp_path)
    lost = RunRecord.start(workflow, {"n": 1}, RunOptions(), "lost")
    result = _result("completed")
    result.warnings = [{"code": "FP541", "task": "draft", "store": "checkpoint"}]
    lost.finish(result)
    assert json.loads(lost.path.read_text())["durable"] is False
    assert resumable_run(tmp_path)["flow_run_id"] == "lost"  # type: ignore[index]
    resume = RunRecord.start(workflow, {"n": 1}, RunOptions(resumed_from=lost.name), "again")
    resume.finish(_result("completed"))
    assert "durable" not in json.loads(resume.path.read_text())
    assert resumable_run(tmp_path) is None


def test_a_killed_process_not_yet_reaped_is_dead() -> None:
    """``kill -9`` leaves a zombie until its parent reaps it, and a container whose PID 1
    reaps no orphan keeps it: ``folpipe resume`` said every run had completed while the
    killed run's zombie held its pid."""
    import time

    from prefect_folpipe.compile.report import _runs

    child = subprocess.Popen(["sleep", "30"])
    try:
        record = {**this_process(), "pid": child.pid}
        record["process_started"] = _runs._process_started(child.pid)
        assert process_alive(record) is True
        child.kill()  # not waited on: a zombie until reaped
        deadline = time.monotonic() + 10
        while _runs._process_stat(child.pid)[:1] != ["Z"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _runs._process_stat(child.pid)[:1] == ["Z"]
        assert process_alive(record) is False
    finally:
        child.kill()
        child.wait()
