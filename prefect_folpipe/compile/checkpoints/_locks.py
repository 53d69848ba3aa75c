"""Concurrent runs of one folder pay once per task: a lock beside each checkpoint being made.

Before a pass runs, the executor takes ``<results>/locks/<checkpoint key>.lock`` (created
exclusively, holding the pid, host, start time and run). A second run reaching the same
checkpoint waits for the lock instead of calling the model again; once it is released, the
second run's pass finds the checkpoint and comes back ``cached``. The lock is released when
the checkpoint file exists (Prefect writes a pass inside a branch task only when the branch
ends), when the pass failed, or when the run ends.

A lock is **stale** when its process is gone (same host) or it is older than
``FOLPIPE_LOCK_STALE_S`` (default one hour; any host): it is taken over. A run waits at most
as long as the holder's pass may take (its ``settings.timeout`` times its attempts, plus a
minute), else an hour; then it warns (FP543) and runs the pass itself. A local checkpoint
folder gets lock files; any other storage block gets leases written through the block
(``checkpoints._leases``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from ..._process.files import read_regular
from ...workflow.tree import Task

LOG = logging.getLogger("prefect_folpipe.compile")
STALE_ENV = "FOLPIPE_LOCK_STALE_S"
DEFAULT_STALE_S = 3600.0
POLL_S = 0.2
HOST = socket.gethostname()


def wait_limit(task: Task) -> float:
    """How long a run waits for another run's pass of ``task``."""
    settings = task.settings
    if settings.timeout:
        return float(settings.timeout) * (1 + (settings.max_retries or 0)) + 60.0
    return DEFAULT_STALE_S


def stale_after() -> float:
    try:
        return float(os.environ.get(STALE_ENV, DEFAULT_STALE_S))
    except ValueError:
        return DEFAULT_STALE_S


class CheckpointLocks:
    """The checkpoint locks one run holds (``folder``: the local checkpoint folder, or
    ``None``: nothing is locked)."""

    def __init__(self, folder: str | Path | None, run: str = "") -> None:
        self.folder = Path(folder) / "locks" if folder is not None else None
        self.checkpoints = Path(folder) if folder is not None else None
        self.run = run
        self.token = uuid.uuid4().hex
        self._local: dict[str, asyncio.Lock] = {}
        self._held: set[str] = set()
        self._pending: set[str] = set()

    async def acquire(self, key: str, task: Task) -> bool:
        """Wait until this run holds ``key``'s lock (``False``: not locked, go on anyway)."""
        if self.folder is None:
            return False
        await self.release_written()
        local = self._local.setdefault(key, asyncio.Lock())
        async with local:  # the same key twice in this run: one at a time
            if key in self._held:  # this run's own lock, its checkpoint not written yet
                return True
            taken = await self._take(key, task)
        if taken:
            self._held.add(key)
        return taken

    async def release(self, key: str, *, settled: bool) -> None:
        """The pass of ``key`` ended; ``settled``: nothing more will be written for it (it
        failed, or came from a checkpoint). Else the lock is kept until the checkpoint file
        exists (checked at each pass and at the end of the run)."""
        if key not in self._held:
            return
        if settled:
            self._drop(key)
        else:
            self._pending.add(key)
        await self.release_written()

    async def release_written(self) -> None:
        """Release the locks whose checkpoint is now written."""
        for key in list(self._pending):
            if self.checkpoints is not None and (self.checkpoints / key).is_file():
                self._drop(key)

    async def release_all(self) -> None:
        """The run ends: every lock it holds goes."""
        for key in list(self._held):
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._pending.discard(key)
        self._held.discard(key)
        if self.folder is None:
            return
        path = self.folder / f"{key}.lock"
        if _read(path).get("token") == self.token:
            with contextlib.suppress(OSError):
                path.unlink()

    async def _take(self, key: str, task: Task) -> bool:
        assert self.folder is not None
        path = self.folder / f"{key}.lock"
        deadline = time.monotonic() + wait_limit(task)
        said = False
        while True:
            try:
                return _create(path, self._info())
            except FileExistsError:
                pass
            holder = _read(path)
            if _stale(path, holder):
                _take_over(path, holder, task)
                continue
            if time.monotonic() >= deadline:
                LOG.warning(
                    "[FP543] task '%s': gave up waiting for another run (pid %s on %s) making "
                    "the same checkpoint; running it here too",
                    task.path, holder.get("pid"), holder.get("host"),
                )  # fmt: skip
                return False
            if not said:
                LOG.info(
                    "task '%s': another run (pid %s) is making this checkpoint; waiting for it",
                    task.path, holder.get("pid"),
                )  # fmt: skip
                said = True
            await asyncio.sleep(POLL_S)

    def _info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "host": HOST,
            "started": time.time(),
            "run": self.run,
            "token": self.token,
        }


def _create(path: Path, info: dict[str, Any]) -> bool:
    """Create the lock file (``FileExistsError`` when someone holds it); ``False`` when the
    folder cannot be written (a full disk): the pass then runs unlocked."""
    try:
        path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the results
        path.parent.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:  # e.g. a file in its way
        LOG.debug("checkpoint lock folder %s not made: %s", path.parent, exc)
        return False
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise
    except OSError as exc:
        LOG.debug("checkpoint lock %s not taken: %s", path, exc)
        return False
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(json.dumps(info))
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        LOG.debug("checkpoint lock %s not written: %s", path, exc)
        return False
    return True


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(path, 4096))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _stale(path: Path, holder: dict[str, Any]) -> bool:
    """The holder is gone: its process died (same host), or the lock is too old."""
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return False  # released meanwhile: try again
    if age > stale_after():
        return True
    pid = holder.get("pid")
    if holder.get("host") != HOST or not isinstance(pid, int) or pid <= 0:
        return not holder and age > 5.0  # unreadable for seconds: a holder that died writing
    return not alive(pid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _take_over(path: Path, holder: dict[str, Any], task: Task) -> None:
    """Remove a stale lock, unless another waiter replaced it meanwhile."""
    aside = path.with_name(f"{path.name}.stale-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, aside)
    except OSError:
        return  # another waiter took it first
    if _read(aside) != holder:  # it was already someone's new lock: put it back
        with contextlib.suppress(OSError):
            os.link(aside, path)
    else:
        LOG.info(
            "task '%s': took over the checkpoint lock of a run that is gone (pid %s)",
            task.path, holder.get("pid"),
        )  # fmt: skip
    with contextlib.suppress(OSError):
        os.unlink(aside)
