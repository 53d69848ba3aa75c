"""Checkpoint locks (issue 31 point 9): one run at a time makes a checkpoint; a lock whose
process is gone, or that is too old, is taken over; a run waits only so long."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from prefect_folpipe.compile.checkpoints import _locks as checkpointlock
from prefect_folpipe.compile.checkpoints._locks import HOST, CheckpointLocks


def _task(timeout: float | None = None) -> Any:
    return SimpleNamespace(path="a/b", settings=SimpleNamespace(timeout=timeout, max_retries=0))


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _plant(folder: Path, key: str, **info: Any) -> Path:
    path = folder / "locks" / f"{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": HOST, "started": time.time(), **info}))
    return path


def test_a_second_run_waits_until_the_checkpoint_is_written(tmp_path: Path) -> None:
    first, second = CheckpointLocks(tmp_path), CheckpointLocks(tmp_path)
    order: list[str] = []

    async def go() -> None:
        assert await first.acquire("k", _task())
        waiting = asyncio.create_task(second.acquire("k", _task()))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # the other run holds it
        await first.release("k", settled=False)  # completed, checkpoint not written yet
        await asyncio.sleep(0.5)
        assert not waiting.done()
        (tmp_path / "k").write_text("{}")  # the checkpoint appears
        await first.release_written()
        order.append("written")
        assert await waiting
        order.append("second")
        await second.release("k", settled=True)

    asyncio.run(go())
    assert order == ["written", "second"]
    assert not list((tmp_path / "locks").iterdir())


def test_a_lock_of_a_dead_process_or_an_old_one_is_taken_over(tmp_path: Path, monkeypatch) -> None:
    locks = CheckpointLocks(tmp_path)
    _plant(tmp_path, "dead", pid=_dead_pid())
    elsewhere = _plant(tmp_path, "old", pid=1, host="another-host")
    os.utime(elsewhere, (time.time() - 7200, time.time() - 7200))
    started = time.monotonic()
    assert asyncio.run(locks.acquire("dead", _task()))
    assert asyncio.run(locks.acquire("old", _task()))
    assert time.monotonic() - started < 5
    held = json.loads((tmp_path / "locks" / "dead.lock").read_text())
    assert held["pid"] == os.getpid() and held["token"] == locks.token
    asyncio.run(locks.release_all())
    assert not [p for p in (tmp_path / "locks").iterdir()]


def test_a_live_holder_is_waited_for_only_so_long(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(checkpointlock, "wait_limit", lambda task: 0.6)
    held = _plant(tmp_path, "busy", pid=os.getpid(), token="someone else")
    with caplog.at_level(logging.WARNING, logger="prefect_folpipe"):
        assert asyncio.run(CheckpointLocks(tmp_path).acquire("busy", _task())) is False
    assert any("FP543" in r.getMessage() and "a/b" in r.getMessage() for r in caplog.records)
    assert held.exists()  # never removed: it is not ours
    monkeypatch.undo()
    assert checkpointlock.wait_limit(_task(timeout=10)) == 70


def test_no_folder_or_an_unwritable_one_locks_nothing(tmp_path: Path) -> None:
    assert asyncio.run(CheckpointLocks(None).acquire("k", _task())) is False
    (tmp_path / "locks").write_text("not a folder")
    assert asyncio.run(CheckpointLocks(tmp_path).acquire("k", _task())) is False
