"""Checkpoint locks on a result-storage block: a lease beside each checkpoint being made.

A storage block (S3, GCS, Azure, SMB, ``RemoteFileSystem``) offers only ``read_path`` and
``write_path``: no exclusive create, no delete, no modification time. So the lock is a lease
object, ``locks/<checkpoint key>.lock``, written through the block: before a pass runs, the
run reads it; when it is free (absent, released, unreadable, or stale) the run writes its own
lease there (a token of its own, pid, host, start time), waits :data:`SETTLE_S` seconds for a
concurrent writer's lease to land, and reads it back: the lease is the run's only if it still
names the run's token. Otherwise another run holds it, and this one waits, as with a local
lock. Releasing writes the lease back marked ``released`` (a block cannot delete), once the
checkpoint can be read through the block, when the pass failed, or when the run ends.

A lease is **stale** when it was released, when its process is gone (same host), or when it
is older than ``FOLPIPE_LOCK_STALE_S`` (default one hour, by the writer's clock; any host).
The wait has the same bound as a local lock's (FP543 when it runs out).

What this guarantees, and what not: two runs that reach a task further apart than the settle
time (and the block's own write-to-read delay) pay for it once; two runs whose lease writes
land within that window of each other can both read back their own lease and both pay (never
more than that: each still uses the checkpoint the other wrote, if any, when it starts). A
store whose reads lag its writes by more than the settle time (an eventually consistent
one) widens that window. A lease is never renewed: a pass that outlives the stale age is
taken over by a waiting run, which then pays for it too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from typing import Any

from prefect._internal.compatibility.blocks import (
    call_explicitly_async_block_method,
)

from ...workflow.tree import Task
from ._files import CheckedStorage
from ._guard import local_folder
from ._locks import HOST, POLL_S, CheckpointLocks, alive, stale_after, wait_limit

LOG = logging.getLogger("prefect_folpipe.compile")
SETTLE_ENV = "FOLPIPE_LOCK_SETTLE_S"
DEFAULT_SETTLE_S = 0.3
"""How long a run waits between writing its lease and reading it back."""
MAX_LEASE_BYTES = 4096


def settle_time() -> float:
    try:
        return max(0.0, float(os.environ.get(SETTLE_ENV, DEFAULT_SETTLE_S)))
    except ValueError:
        return DEFAULT_SETTLE_S


def lease_path(key: str) -> str:
    return f"locks/{key}.lock"


class BlockLocks:
    """The checkpoint leases one run holds on a storage ``block`` (the block itself, not the
    checking wrapper the checkpoints go through: a lease is no checkpoint)."""

    def __init__(self, block: Any, run: str = "") -> None:
        self.block = block
        self.run = run
        self.token = uuid.uuid4().hex
        self._local: dict[str, asyncio.Lock] = {}
        self._held: set[str] = set()
        self._pending: set[str] = set()

    async def acquire(self, key: str, task: Task) -> bool:
        """Wait until this run holds ``key``'s lease (``False``: not leased, go on anyway)."""
        await self.release_written()
        local = self._local.setdefault(key, asyncio.Lock())
        async with local:  # the same key twice in this run: one at a time
            if key in self._held:
                return True
            taken = await self._take(key, task)
        if taken:
            self._held.add(key)
        return taken

    async def release(self, key: str, *, settled: bool) -> None:
        """The pass of ``key`` ended; ``settled``: nothing more will be written for it. Else
        the lease is kept until its checkpoint can be read through the block."""
        if key not in self._held:
            return
        if settled:
            await self._drop(key)
        else:
            self._pending.add(key)
        await self.release_written()

    async def release_written(self) -> None:
        """Release the leases whose checkpoint is now in the block."""
        for key in list(self._pending):
            if await self._async("read_path", key) is not None:
                await self._drop(key)

    async def release_all(self) -> None:
        """The run ends: every lease it holds goes."""
        for key in list(self._held):
            await self._drop(key)

    async def _drop(self, key: str) -> None:
        self._pending.discard(key)
        self._held.discard(key)
        path = lease_path(key)
        if _parse(await self._async("read_path", path)).get("token") == self.token:
            released = {"token": self.token, "released": True, "host": HOST}
            await self._async("write_path", path, json.dumps(released).encode())

    async def _take(self, key: str, task: Task) -> bool:
        path = lease_path(key)
        deadline = time.monotonic() + wait_limit(task)
        said = False
        while True:
            holder = _parse(await self._async("read_path", path))
            if _free(holder):
                if await self._async("write_path", path, json.dumps(self._info()).encode()) is None:
                    return False  # the block cannot be written: the pass runs unlocked
                await asyncio.sleep(settle_time())
                holder = _parse(await self._async("read_path", path))
                if holder.get("token") == self.token:
                    return True
            if time.monotonic() >= deadline:
                LOG.warning(
                    "[FP543] task '%s': gave up waiting for another run (pid %s on %s) making "
                    "the same checkpoint; running it here too",
                    task.path, holder.get("pid"), holder.get("host"),
                )  # fmt: skip
                return False
            if not said:
                LOG.info(
                    "task '%s': another run (pid %s on %s) is making this checkpoint; waiting "
                    "for it", task.path, holder.get("pid"), holder.get("host"),
                )  # fmt: skip
                said = True
            await asyncio.sleep(POLL_S)

    def _info(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "pid": os.getpid(),
            "host": HOST,
            "started": time.time(),
            "run": self.run,
        }

    async def _async(self, method: str, *args: Any) -> Any:
        """A block call (``None`` when it fails: a missing lease, an unreachable store)."""
        try:
            return await call_explicitly_async_block_method(self.block, method, args, {}) or b""
        except Exception as exc:
            LOG.debug("checkpoint lease %s %s: %s", method, args[0], exc)
            return None


def _parse(data: Any) -> dict[str, Any]:
    """A lease's content (``{}``: none, or not a lease)."""
    if not isinstance(data, bytes | bytearray) or len(data) > MAX_LEASE_BYTES:
        return {}
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _free(holder: dict[str, Any]) -> bool:
    """Nobody holds the lease: none, released, its process gone, or older than the stale age."""
    if not holder.get("token") or holder.get("released"):
        return True
    started = holder.get("started")
    if not isinstance(started, int | float) or time.time() - started > stale_after():
        return True
    pid = holder.get("pid")
    if holder.get("host") == HOST and isinstance(pid, int) and pid > 0:
        return not alive(pid)
    return False


def checkpoint_locks(storage: Any, run: str = "") -> CheckpointLocks | BlockLocks:
    """The locks of a run's checkpoints: lock files in a local checkpoint folder, leases on
    any other storage block."""
    folder = local_folder(storage)
    if folder is not None:
        return CheckpointLocks(folder, run)
    if isinstance(storage, CheckedStorage):
        return BlockLocks(storage.inner, run)
    return CheckpointLocks(None, run)
