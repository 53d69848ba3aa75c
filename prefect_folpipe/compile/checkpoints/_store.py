"""The run's result storage as a key -> bytes store: model-call journals and approval answers
live there, next to the checkpoints (Prefect-free; a storage block is only called).

The result storage is a ``Path`` (the default ``<workflow>/.folpipe/results``) or any Prefect
result-storage block (``WritableFileSystem``: ``read_path`` / ``write_path``, sync or async).
Files are written whole and moved into place, so a process killed mid-write leaves the old
entry or none, never half of one; like the checkpoints, they are 0600 in 0700 folders, and
like them read and written in place, on the event loop: a hop to a worker thread for each
(two per model call) cost more than the small file's I/O, and the hops of a parallel group
queued behind each other (a 50-leaf group 8 % slower, a 200-task chain 7-12 %). Every
entry is signed with the store key, bound to its key (``compile.storekey``): one that fails
the check is a miss with a warning (FP540), never used.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from pathlib import Path
from typing import Any

from ..._process.files import read_regular, replace_whole
from ..._process.stored import DAMAGED, MAX_BYTES
from ...agent.journal import Journal
from ...workflow.tree import Task
from ..shared import RunSpec
from ..storekey import DamagedSeal, ForgedEntry, seal, unseal
from ._events import forged, unsaved

LOG = logging.getLogger("prefect_folpipe.compile")


FOLDER_MODE = 0o700


class StorageFiles:
    """``agent.journal.JournalStore`` over a result storage (a folder or a storage block):
    JSON objects, signed on write and checked on read (``compile.storekey``)."""

    def __init__(self, storage: Any, task: str | None = None) -> None:
        self.storage = Path(storage) if isinstance(storage, str) else storage
        self.task = task
        """The task whose entries these are, for the run's report (``None``: several)."""

    async def read(self, key: str, task: str | None = None) -> bytes | None:
        """The entry at ``key`` without its tag, or ``None`` (missing, or failed the check:
        FP540)."""
        data = await self._read(key)
        if data is None:
            return None
        try:
            return unseal(_kind(key), key, data)
        except DamagedSeal as exc:
            LOG.warning(
                "[%s] ignoring %s entry %s: %s; %s",
                DAMAGED,
                _kind(key),
                key,
                exc,
                _CONSEQUENCE[_kind(key)],
            )
            return None
        except ForgedEntry as exc:
            forged(_kind(key), key, str(exc), _CONSEQUENCE[_kind(key)], task or self.task)
            return None

    async def _read(self, key: str) -> bytes | None:
        if isinstance(self.storage, Path):
            return _read_file(self.storage / key)
        try:
            return bytes(await _call(self.storage, "read_path", key))
        except Exception as exc:  # a block raises its own "not found"
            LOG.debug("storage read %s: %s", key, exc)
            return None

    async def write(self, key: str, data: bytes, task: str | None = None) -> None:
        """Sign and store ``data`` (a JSON object); a failed write is reported (FP541) and
        the caller goes on without it (nothing partial is left)."""
        sealed = seal(_kind(key), key, data)
        try:
            if isinstance(self.storage, Path):
                _write_file(self.storage / key, sealed)
            else:
                await _call(self.storage, "write_path", key, sealed)
        except Exception as exc:
            unsaved(_kind(key), key, exc, task or self.task)


_CONSEQUENCE = {
    "journal": "the call goes to the model again",
    "approvals": "the gate asks again",
}


def _kind(key: str) -> str:
    """The store an entry belongs to: ``journal`` or ``approvals`` (its first folder)."""
    kind = key.split("/", 1)[0]
    return kind if kind in _CONSEQUENCE else "journal"


async def _call(block: Any, method: str, *args: Any) -> Any:
    """A block method: its explicit async form (``aread_path``) when it has one."""
    explicit = getattr(block, f"a{method}", None)
    if callable(explicit):
        return await explicit(*args)
    value = getattr(block, method)(*args)
    return await value if inspect.isawaitable(value) else value


def _read_file(path: Path) -> bytes | None:
    """The entry's bytes, never more than a stored entry may hold (one byte more, so that
    the reader sees it is too large); a missing or unreadable entry is a miss."""
    try:
        return read_regular(path, MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a folder where the entry belongs, no permission, an I/O error
        LOG.warning("[%s] ignoring stored entry %s: %s", DAMAGED, path.name, exc)
        return None


def _private_folders(folder: Path) -> None:
    """``mkdir -p`` with every folder it creates owner-only (``mkdir(parents=True)`` gives
    the parents the umask's mode)."""
    if folder.is_dir():
        return
    _private_folders(folder.parent)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=FOLDER_MODE)


def _write_file(path: Path, data: bytes) -> None:
    """Journal entries hold model output: owner-only, like the checkpoints."""
    _private_folders(path.parent)
    replace_whole(path, data)


def journal_for(
    spec: RunSpec,
    task: Task,
    phase: str,
    scope: list[int] | tuple[int, ...] | None,
    salt: str = "",
) -> Journal | None:
    """The journal of one pass of ``task``, or ``None`` when its checkpoints are off.

    One journal per task, phase, loop iteration and ``salt``: what answers the task, as in
    its checkpoint key, and how far its checkpoints reach (``compile.scope``: a deployment run
    replays only its own lineage's answers unless checkpoints reach across runs). ``--fresh``
    only replays what its own lineage journaled (its retries, and a resume of it: ``folpipe
    resume``, the UI's Retry), never an earlier run's.
    """
    if spec.storage is None or not task.settings.cache:
        return None
    namespace = f"{task.path}|{phase}|{list(scope or ())}|{salt}"
    return Journal(
        StorageFiles(spec.storage, task.path),
        task.path,
        namespace,
        workflow_root=spec.root_dir,
        run=spec.checkpoints.lineage or spec.key,  # a resume continues its run's lineage
        only_run=spec.checkpoints.renews(task, phase),
    )
