"""Full disks and failing writes are loud and lose nothing (issue 31 point 3).

A checkpoint or journal entry that cannot be written leaves no empty or partial file, is a
coded warning (FP541) per task in the run document and the summary, makes ``folpipe run``
exit 3 ("completed but not durable") without a traceback, and the next run re-runs only what
was not stored. Once on a real 256 KB filesystem (tmpfs; needs root), once with writes made to
fail in the process.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]

NAMES = ["one", "two", "three", "four", "five", "six"]
BIG = "x" * 50_000  # each answer and its checkpoint: ~100 KB of the 256 KB store


def _chain(root: Path) -> Path:
    files: dict[str, Any] = {
        "task.yaml": {"name": "bulky", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {"tasks": {name: [f"{name} {BIG}"] for name in NAMES}},
    }
    for number, name in enumerate(NAMES, 1):
        files[f"subtasks/{number}0_{name}/instructions.md"] = f"Write part {name}."
    return write_workflow(root, files)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB filesystem (tmpfs) to hold the result store."""
    mount = tmp_path / "store" / "results"
    mount.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(mount)],
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[:200]}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _folpipe(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)], env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _in_process(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The same command in this process (tests/inprocess.py): what it prints and exits with."""
    from inprocess import folpipe_in_process

    results = {"FOLPIPE_RESULTS_DIR": env["FOLPIPE_RESULTS_DIR"]}
    return folpipe_in_process(*map(str, args), api_url=env["PREFECT_API_URL"], env=results)


def _stored(store: Path) -> set[str]:
    return {p.name.split("-", 1)[0] for p in store.iterdir() if p.is_file()}


def test_a_full_disk_is_loud_and_the_next_run_reruns_only_what_was_lost(
    tmp_path: Path, cli_env: dict[str, str], small_disk: Path
) -> None:
    root = _chain(tmp_path / "wf")
    env = {**cli_env, "FOLPIPE_RESULTS_DIR": str(small_disk)}
    done = _folpipe(env, "run", root, "--json")
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["status"] == "completed" and document["durable"] is False
    stored = _stored(small_disk)
    lost = [name for name in NAMES if name not in stored]
    assert lost, "the disk never filled up"
    unsaved = {(w["task"], w["store"]) for w in document["warnings"] if w["code"] == "FP541"}
    assert {task for task, store in unsaved if store == "checkpoint"} == set(lost)
    assert all(w["task"] in NAMES for w in document["warnings"])
    files = [p for p in small_disk.rglob("*") if p.is_file()]
    assert all(p.stat().st_size > 0 for p in files), "an empty file was left"
    assert not [p for p in files if p.name.endswith((".part", ".tmp"))], "a partial file was left"

    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    resumed = _in_process(env, "resume", root, "--json")  # a run that is not durable is resumable
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    document = json.loads(resumed.stdout)
    assert "durable" not in document and "warnings" not in document
    statuses = {row["path"]: row["status"] for row in document["tasks"] if row["path"]}
    assert statuses == {name: "completed" if name in lost else "cached" for name in NAMES}
    again = _in_process(env, "run", root)  # the human summary this time
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "FP541" not in again.stdout and "not durable" not in again.stdout
    third = json.loads(_in_process(env, "run", root, "--json").stdout)
    assert {row["path"]: row["status"] for row in third["tasks"] if row["path"]} == dict.fromkeys(
        NAMES, "cached"
    )


def test_the_summary_names_the_lost_checkpoint(
    tmp_path: Path, cli_env: dict[str, str], small_disk: Path
) -> None:
    root = _chain(tmp_path / "wf")
    done = _folpipe({**cli_env, "FOLPIPE_RESULTS_DIR": str(small_disk)}, "run", root)
    assert done.returncode == 3
    assert "Traceback" not in done.stdout + done.stderr
    assert "FP541" in done.stdout and "not durable" in done.stdout


def _enospc(*_args: Any, **_kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_failing_checkpoint_and_journal_writes_in_process(make_workflow, run, monkeypatch):
    """Without a small filesystem: the writes themselves raise ENOSPC."""
    from prefect_folpipe.compile.checkpoints import _files as checkpoints
    from prefect_folpipe.compile.checkpoints import _store as journal

    wf = make_workflow(
        {
            "task.yaml": {"name": "ckpt", "subtasks": {"execution_type": "sequential"}},
            "subtasks/10_draft/instructions.md": "Draft.",
            "subtasks/20_review/instructions.md": "Review.",
            "replies.yaml": {"default": "ok"},
        }
    )
    real = checkpoints.write_whole

    def full_for_review(target: Path, content: bytes) -> None:
        if target.name.startswith("review-"):
            _enospc()
        real(target, content)

    monkeypatch.setattr(checkpoints, "write_whole", full_for_review)
    monkeypatch.setattr(journal, "_write_file", _enospc)
    first = run(wf)
    assert first.status == "completed" and not first.durable
    warnings = {(w["code"], w["task"], w["store"]) for w in first.warnings}
    assert ("FP541", "review", "checkpoint") in warnings
    assert {("FP541", "draft", "journal"), ("FP541", "review", "journal")} <= warnings
    assert ("FP541", "draft", "checkpoint") not in warnings
    assert first.to_dict()["durable"] is False
    results = wf / ".folpipe" / "results"
    assert not list(results.glob("review-*")) and list(results.glob("draft-*"))
    assert not [p for p in results.rglob("*") if p.is_file() and p.stat().st_size == 0]

    monkeypatch.undo()
    second = run(wf)
    assert second.durable and "durable" not in second.to_dict()
    assert [second.task(p)["status"] for p in ("draft", "review")] == ["cached", "completed"]


def test_a_lost_checkpoint_inside_a_branch_names_its_task(make_workflow, run, monkeypatch):
    """Prefect writes the checkpoints of a branch's tasks when the branch ends: the warning
    still names the task, and the run's locks are let go."""
    from prefect_folpipe.compile.checkpoints import _files as checkpoints

    wf = make_workflow(
        {
            "task.yaml": {"name": "nested", "subtasks": {"execution_type": "sequential"}},
            "subtasks/10_group/subtasks/inner/instructions.md": "Inner.",
            "subtasks/20_after/instructions.md": "After.",
            "replies.yaml": {"default": "ok"},
        }
    )
    real = checkpoints.write_whole

    def full_for_inner(target: Path, content: bytes) -> None:
        if target.name.startswith("group-inner-"):
            _enospc()
        real(target, content)

    monkeypatch.setattr(checkpoints, "write_whole", full_for_inner)
    first = run(wf)
    assert first.status == "completed" and not first.durable
    assert [(w["code"], w["task"]) for w in first.warnings] == [("FP541", "group/inner")]
    assert not list((wf / ".folpipe" / "results" / "locks").iterdir())
