"""Run records and checkpoint manifests cannot be forged (issue 31 point 2): they are signed
with the store key like the result store's entries, bound to what they describe (a record to
its file name, the run's name; a manifest to its pass). An edited, moved or unsigned one (by
hand, or written by a folpipe that did not sign them) is left out with one FP540 warning
naming it: ``status``, ``resume``, ``diff``, ``--from`` and ``plan`` never act on it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow

from prefect_folpipe.compile import storekey
from prefect_folpipe.compile.report import list_runs, read_record, resumable_run, runs_dir
from prefect_folpipe.compile.report._runs import write_record
from prefect_folpipe.plan._manifest import manifest_file, read_manifest, write_manifest

FORGED = "FP540"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(storekey.KEY_ENV, "the test's store key")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if FORGED in r.getMessage()]


def _workflow(root: Path) -> Path:
    """Two scripted tasks in a row (``a``, ``b``)."""
    return write_workflow(
        root,
        {
            "task.yaml": {
                "name": "signed",
                "providers": {"default": "s", "s": {"type": "scripted", "replies": "replies.yaml"}},
                "subtasks": {"execution_type": "sequential"},
            },
            "replies.yaml": {"tasks": {"a": [{"text": "a done"}], "b": [{"text": "b done"}]}},
            "subtasks/10_a/instructions.md": "Say a.",
            "subtasks/20_b/instructions.md": "Say b.",
        },
    )


def _edit(file: Path, **changes: Any) -> None:
    data = json.loads(file.read_text())
    data.update(changes)
    file.write_text(json.dumps(data, indent=2))


# -- run records ------------------------------------------------------------------------------


def test_an_edited_moved_or_unsigned_run_record_is_left_out_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = runs_dir(tmp_path)
    good, edited, moved = (folder / f"2026010{n}T000000-r{n}.json" for n in (1, 2, 3))
    for file in (good, edited):
        assert write_record(file, {"status": "completed", "flow_run_id": file.stem, "tasks": []})
    assert json.loads(good.read_text())["status"] == "completed"  # still status first
    _edit(edited, tasks=[{"path": "a", "status": "failed"}])
    moved.write_bytes(good.read_bytes())  # a valid record under another run's name
    unsigned = folder / "20250101T000000-old.json"  # what a folpipe before signing wrote
    unsigned.write_text(json.dumps({"status": "failed", "flow_run_id": "old", "tasks": []}))
    with caplog.at_level(logging.WARNING):
        assert [r["flow_run_id"] for r in list_runs(tmp_path)] == [good.stem]
        assert read_record(edited) is None and read_record(moved) is None
        list_runs(tmp_path)  # asked again: warned once per file
    warned = _warnings(caplog)
    assert len(warned) == 3, warned
    for file in (edited, moved, unsigned):
        assert sum(file.name in message for message in warned) == 1
    assert any("not signed" in message for message in warned if unsigned.name in message)
    assert resumable_run(tmp_path) is None  # the "failed" ones are not trusted: nothing to resume


def test_a_record_edited_to_look_unfinished_is_not_resumed_and_status_ignores_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect_folpipe.deploy.status import recorded_run_ids

    folder = runs_dir(tmp_path)
    failed = folder / "20260101T000000-failed.json"
    done = folder / "20260102T000000-done.json"
    write_record(failed, {"status": "failed", "flow_run_id": "run-1", "context": {"n": 1}})
    write_record(done, {"status": "completed", "flow_run_id": "run-2", "context": {"n": 2}})
    assert resumable_run(tmp_path)["flow_run_id"] == "run-1"  # type: ignore[index]
    # someone points the completed run at another flow run and makes it look resumable
    _edit(done, status="failed", flow_run_id="someone-elses", context={"n": "injected"})
    with caplog.at_level(logging.WARNING):
        taken = resumable_run(tmp_path)
        assert recorded_run_ids(tmp_path) == {"run-1"}
    assert taken is not None and taken["flow_run_id"] == "run-1" and taken["context"] == {"n": 1}
    assert any(done.name in message for message in _warnings(caplog))


def _run_in_process(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The run the test then edits the records of: ``folpipe run`` in this process."""
    from inprocess import folpipe_in_process

    key = {storekey.KEY_ENV: env[storekey.KEY_ENV]}
    return folpipe_in_process("run", str(root), "--json", api_url=env["PREFECT_API_URL"], env=key)


def test_a_resume_and_status_do_not_act_on_an_edited_record(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """End to end: a completed run's record edited to ``failed`` (as if it could be
    resumed with other tasks) is not resumed, and both commands name it with FP540."""
    root = _workflow(tmp_path / "wf")
    folpipe = [sys.executable, "-m", "prefect_folpipe"]
    env = {**cli_env, storekey.KEY_ENV: "the test's store key"}
    run = _run_in_process(root, env)
    assert run.returncode == 0, run.stderr[-2000:]
    [record] = sorted(runs_dir(root).glob("*.json"))
    _edit(record, status="failed", tasks=[{"path": "b", "status": "failed"}])
    resume = subprocess.run([*folpipe, "resume", str(root)], env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert resume.returncode == 2 and "FP404" in resume.stdout + resume.stderr, resume.stderr
    assert FORGED in resume.stderr and record.name in resume.stderr
    status = subprocess.run([*folpipe, "status", str(root), "--json"], env=env,
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert FORGED in status.stderr and record.name in status.stderr, status.stderr[-2000:]


# -- manifests --------------------------------------------------------------------------------


def _manifest(folder: Path, path: str = "a") -> Path:
    from builders import make_task

    task = make_task(path, path)
    write_manifest(folder, task, phase="single", iteration=(), key="k1", parts={"files": {}},
                   delta={"a": "kept"}, seal=storekey.seal)  # fmt: skip
    return manifest_file(folder, path, "single")


def test_an_edited_moved_or_unsigned_manifest_is_missing_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = _manifest(tmp_path)
    read = read_manifest(tmp_path, "a", "single", unseal=storekey.unseal)
    assert read is not None and read["delta"] == {"a": "kept"} and read["key"] == "k1"
    other = _manifest(tmp_path, "b")
    other.write_bytes(file.read_bytes())  # a's manifest planted as b's
    with caplog.at_level(logging.WARNING):
        assert read_manifest(tmp_path, "b", "single", unseal=storekey.unseal) is None
        _edit(file, delta={"a": "forged"})
        assert read_manifest(tmp_path, "a", "single", unseal=storekey.unseal) is None
        assert read_manifest(tmp_path, "a", "single", unseal=storekey.unseal) is None
        file.write_text(json.dumps({"path": "a", "phase": "single", "key": "k1", "delta": {}}))
        assert read_manifest(tmp_path, "a", "single", unseal=storekey.unseal) is None
    warned = _warnings(caplog)
    assert len(warned) == 3, warned  # b, the edit (once), the unsigned one
    assert sum(other.name in message for message in warned) == 1
    assert "not signed" in warned[-1] and file.name in warned[-1]


def test_plan_treats_an_edited_manifest_as_missing(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``folpipe plan`` (and ``--from``, which restores only what a manifest vouches for)
    does not read a forged manifest's output: the task would run, and the warning names it."""
    root = _workflow(tmp_path / "wf")
    folpipe = [sys.executable, "-m", "prefect_folpipe"]
    env = {**cli_env, storekey.KEY_ENV: "the test's store key"}
    run = _run_in_process(root, env)
    assert run.returncode == 0, run.stderr[-2000:]

    def plan() -> tuple[dict[str, str], str]:
        done = subprocess.run([*folpipe, "plan", str(root), "--json"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        steps = json.loads(done.stdout)["steps"]
        return {step["path"]: step["status"] for step in steps}, done.stderr

    before, _ = plan()
    assert before["a"] == before["b"] == "checkpoint"
    manifest = manifest_file(root / ".folpipe" / "manifests", "a", "single")
    _edit(manifest, delta={"a": "forged output"})
    after, stderr = plan()
    assert after["a"] == "runs" and FORGED in stderr and manifest.name in stderr, stderr
