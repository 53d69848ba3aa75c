"""Checkpoint locks on a result-storage block (issue 31 point 9): a block has no exclusive
create, so a run leases ``locks/<key>.lock`` through the block (write, wait, read back) and
a second run waits for the lease instead of paying for the same pass. Two concurrent runs
through a saved block: ``tests/cli/test_concurrent_runs.py``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from blockstore import FarFolder
from builders import make_task
from prefect.filesystems import LocalFileSystem

from prefect_folpipe.compile.checkpoints import (
    BlockLocks,
    CheckpointLocks,
    checkpoint_locks,
    checkpoint_storage,
)
from prefect_folpipe.compile.checkpoints._leases import HOST, lease_path

TASK = make_task("t", "t")


@pytest.fixture(autouse=True)
def _quick_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLPIPE_LOCK_SETTLE_S", "0.05")


def _block(tmp_path: Path) -> FarFolder:
    return FarFolder(basepath=str(tmp_path / "store"))


def _lease(tmp_path: Path, key: str) -> dict[str, Any]:
    return json.loads((tmp_path / "store" / lease_path(key)).read_text())


def test_a_storage_block_gets_leases_a_folder_gets_lock_files(tmp_path: Path) -> None:
    assert isinstance(checkpoint_locks(checkpoint_storage(_block(tmp_path))), BlockLocks)
    folder = checkpoint_locks(checkpoint_storage(LocalFileSystem(basepath=str(tmp_path))))
    assert isinstance(folder, CheckpointLocks) and folder.folder == tmp_path / "locks"
    assert checkpoint_locks(None).folder is None  # type: ignore[union-attr]


def test_a_second_run_waits_for_the_lease_until_it_is_released(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        first, second = BlockLocks(_block(tmp_path)), BlockLocks(_block(tmp_path))
        events: list[str] = []
        assert await first.acquire("k", TASK)
        events.append("first holds")

        async def wait() -> None:
            assert await second.acquire("k", TASK)
            events.append("second holds")

        waiting = asyncio.create_task(wait())
        await asyncio.sleep(1.0)
        events.append("first releases")
        await first.release("k", settled=True)
        await asyncio.wait_for(waiting, 10)
        assert _lease(tmp_path, "k")["token"] == second.token
        await second.release_all()
        return events

    assert asyncio.run(scenario()) == ["first holds", "first releases", "second holds"]
    assert _lease(tmp_path, "k")["released"] is True  # a block cannot delete: marked free


def test_a_lease_is_kept_until_its_checkpoint_is_in_the_block(tmp_path: Path) -> None:
    async def scenario() -> None:
        locks = BlockLocks(_block(tmp_path))
        assert await locks.acquire("k", TASK)
        await locks.release("k", settled=False)  # completed; Prefect writes the checkpoint later
        assert not _lease(tmp_path, "k").get("released")
        (tmp_path / "store" / "k").write_text("{}")  # the checkpoint
        await locks.release_written()
        assert _lease(tmp_path, "k")["released"] is True

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("holder", "free"),
    [
        ({"pid": "dead", "host": HOST}, True),  # its process is gone
        ({"pid": os.getpid(), "host": "elsewhere", "started": 0.0}, True),  # too old
        ({"pid": os.getpid(), "host": "elsewhere"}, False),  # alive, for all we know
        ({"pid": os.getpid(), "host": HOST}, False),  # alive here
        ({"pid": os.getpid(), "host": HOST, "released": True}, True),
    ],
)
def test_a_stale_lease_is_taken_over(
    tmp_path: Path, holder: dict[str, Any], free: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("prefect_folpipe.compile.checkpoints._leases.wait_limit", lambda t: 0.5)
    if holder.get("pid") == "dead":
        process = subprocess.Popen([sys.executable, "-c", "pass"])
        process.wait()
        holder = {**holder, "pid": process.pid}
    lease = {"token": "someone", "started": time.time(), **holder}
    file = tmp_path / "store" / lease_path("k")
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps(lease))
    locks = BlockLocks(_block(tmp_path))
    assert asyncio.run(locks.acquire("k", TASK)) is free  # a held one: gives up (FP543)
    assert (_lease(tmp_path, "k")["token"] == locks.token) is free


def test_a_block_that_cannot_be_written_runs_the_pass_unlocked(tmp_path: Path) -> None:
    (tmp_path / "store").write_text("a file where the store's folder belongs")
    assert asyncio.run(BlockLocks(_block(tmp_path)).acquire("k", TASK)) is False
