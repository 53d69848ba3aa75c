"""Checkpoint files as data, never code: JSON records, owner-only, checked before Prefect reads.

A checkpoint is the result record Prefect persists for a leaf's pass. Prefect reads a record
with the serializer the record itself names, so a planted file naming ``pickle`` (or a JSON
serializer with an ``object_decoder`` of its choice) would run code on the next cache lookup.
Every checkpoint is therefore written with plain JSON (``SERIALIZER``: no object encoder or
decoder; a pass's payload is JSON by rule, FP515), and the result storage checks each record
it hands to Prefect: a file that is not such a record — tampered, truncated, pickled — is a
cache miss with a warning (FP517), and the task runs again and overwrites it. Each record
also carries a tag over its content and its key (``compile.storekey``): a record edited, copied
under another key or written without the store key is a miss too (FP540). Files are written
whole (a temporary file, then a rename) with mode 0600 in a 0700 folder; a write that fails
(a full disk) leaves no file, raises nothing into Prefect (no traceback) and is reported as
FP541 for the run's report (``compile.storeevents``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from prefect._internal.compatibility.blocks import (
    call_explicitly_async_block_method,
    call_explicitly_sync_block_method,
)
from prefect.filesystems import LocalFileSystem, WritableFileSystem
from prefect.serializers import JSONSerializer
from pydantic import ConfigDict

from ..._process.files import read_regular, replace_whole
from ..._process.stored import MAX_BYTES, DamagedEntry, load_stored
from ...redaction import mask
from ..storekey import ForgedEntry, seal, verified
from ._events import forged, unsaved

LOG = logging.getLogger("prefect_folpipe.compile")


def encode_failure(value: Any) -> Any:
    """What Prefect stores for a failed attempt's exception: its type, code and masked
    message, as data (never an object to rebuild); anything else is not JSON data."""
    if isinstance(value, BaseException):
        return {
            "error": type(value).__name__,
            "code": getattr(value, "code", None),
            "message": mask(str(value)),
        }
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


SERIALIZER = JSONSerializer(object_encoder=f"{__name__}.encode_failure", object_decoder=None)
"""What every checkpoint is written with: the standard library's JSON, nothing else (a failed
attempt's exception is written as plain data; nothing is ever decoded into an object)."""
PAYLOAD_KEYS = frozenset({"delta", "text", "usage", "model_calls", "tool_calls"})


class UntrustedCheckpoint(ValueError):
    """A stored file that is not a folpipe JSON checkpoint (never deserialised)."""

    code = "FP517"


def check_record(content: bytes) -> None:
    """Raise ``UntrustedCheckpoint`` unless ``content`` is a JSON result record whose
    serializer is plain JSON and whose result is a pass payload."""
    check_parsed(_parsed(content))


def _parsed(content: bytes) -> Any:
    try:
        return load_stored(content)
    except DamagedEntry as exc:
        raise UntrustedCheckpoint(f"not a JSON record within bounds: {exc}") from None


def check_parsed(record: Any) -> None:
    """``check_record`` of a record already parsed."""
    if not isinstance(record, dict) or not isinstance(record.get("metadata"), dict):
        raise UntrustedCheckpoint("not a result record")
    serializer = record["metadata"].get("serializer")
    if not _plain_json(serializer):
        raise UntrustedCheckpoint(f"its serializer is not plain JSON: {_brief(serializer)}")
    result = record.get("result")
    try:
        payload = load_stored(result) if isinstance(result, str) else None
    except DamagedEntry:
        payload = None
    if not isinstance(payload, dict) or not payload.keys() >= PAYLOAD_KEYS:
        raise UntrustedCheckpoint("its result is not a task payload")


def _plain_json(serializer: Any) -> bool:
    if not isinstance(serializer, dict):
        return False
    return (
        serializer.get("type") == "json"
        and serializer.get("jsonlib", "json") == "json"
        and serializer.get("object_decoder") is None
        and not serializer.get("loads_kwargs")
    )


def _brief(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 120 else f"{text[:117]}..."


def _refuse(path: str, exc: UntrustedCheckpoint) -> None:
    LOG.warning(
        "[%s] ignoring checkpoint %s: %s; the task runs again and replaces it", exc.code, path, exc
    )


class CheckpointStorage(LocalFileSystem):
    """Local checkpoint folder: records checked on read, written owner-only (0600)."""

    _block_type_name = "folpipe checkpoint folder"

    async def aread_path(self, path: str) -> bytes:
        return self._read_checked(path)

    def read_path(self, path: str, _sync: bool | None = None) -> bytes:  # type: ignore[override]
        return self._read_checked(path)

    async def awrite_path(self, path: str, content: bytes) -> str:
        return self._write_private(path, content)

    def write_path(  # type: ignore[override]
        self, path: str, content: bytes, _sync: bool | None = None
    ) -> str:
        return self._write_private(path, content)

    def _resolve_path(self, path: str) -> Path:
        """``path`` under the folder, symlinks resolved; refused outside it (as Prefect's
        ``LocalFileSystem``, with the folder resolved once rather than at every read)."""
        return self._resolved(path)[0]

    def _resolved(self, path: str) -> tuple[Path, bool]:
        """:meth:`_resolve_path`, and whether its ``lstat`` found a regular file there."""
        base = _resolved_folder(self.basepath or ".")
        if not path:  # the folder itself (Prefect asks for it with every record it writes)
            return Path(base), False
        if _plain_file(base, path):  # a record's own name: no symlink to follow
            return Path(base, path), True
        below = _below(base, path)
        if below is not None:
            return below, False
        target = os.path.realpath(os.path.join(base, os.path.expanduser(path)))
        if target != base and not target.startswith(base.rstrip(os.sep) + os.sep):
            raise ValueError(f"Provided path {target} is outside of the base path {base}.")
        return Path(target), False

    def _read_checked(self, path: str) -> bytes:
        target, regular = self._resolved(path)
        if not regular and not target.is_file():
            raise ValueError(f"Path {target} does not exist or is not a file.")
        # never more than a record may hold; a FIFO put there is refused, not waited on
        return _checked(str(target), read_regular(target, MAX_BYTES + 1))

    def _write_private(self, path: str, content: bytes) -> str:
        target = self._resolve_path(path)
        if target.exists() and not target.is_file():
            raise ValueError(f"Path {target} already exists and is not a file.")
        try:
            write_whole(target, seal(KIND, binding(path), content))
        except OSError as exc:  # a full disk: reported, never a traceback (FP541)
            unsaved(KIND, binding(path), exc)
        return str(target)


def _plain_file(base: str, name: str) -> bool:
    """``name`` is one path component naming a regular file (not a link) in ``base``."""
    if name in ("", ".", "..") or name.startswith("~") or os.sep in name:
        return False
    try:
        return stat.S_ISREG(os.lstat(os.path.join(base, name)).st_mode)
    except (OSError, ValueError):
        return False


def _below(base: str, path: str) -> Path | None:
    """``path`` (absolute, as Prefect names a record, or relative) inside ``base`` with no
    link on the way: what ``realpath`` answers, from an ``lstat`` of each part below
    ``base`` only; ``None`` when that cannot be decided so (a link, ``..``, elsewhere)."""
    if path.startswith("~"):
        return None
    full = path if os.path.isabs(path) else os.path.join(base, path)
    prefix = base.rstrip(os.sep) + os.sep
    if not full.startswith(prefix):
        return None
    parts = full[len(prefix) :].split(os.sep)
    if any(part in ("", ".", "..") for part in parts):
        return None
    current = base
    for part in parts:
        current = os.path.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return None
        except FileNotFoundError:
            break  # nothing below exists: no link to follow
        except (OSError, ValueError):
            return None
    return Path(full)


@functools.lru_cache(maxsize=64)
def _resolved_folder(basepath: str) -> str:
    return os.path.realpath(os.path.expanduser(basepath))


class CheckedStorage(WritableFileSystem):
    """Any other result storage block (S3, GCS, ...), its records checked on read."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _block_type_name = "folpipe checked result storage"

    inner: Any

    async def aread_path(self, path: str) -> bytes:
        content = await call_explicitly_async_block_method(self.inner, "read_path", (path,), {})
        return _checked(path, content)

    def read_path(self, path: str, _sync: bool | None = None) -> bytes:  # type: ignore[override]
        content = call_explicitly_sync_block_method(self.inner, "read_path", (path,), {})
        return _checked(path, content)

    async def awrite_path(self, path: str, content: bytes) -> Any:
        args = (path, seal(KIND, binding(path), content))
        try:
            return await call_explicitly_async_block_method(self.inner, "write_path", args, {})
        except Exception as exc:  # the block's own error (a full bucket, no network): FP541
            unsaved(KIND, binding(path), exc)
            return path

    def write_path(  # type: ignore[override]
        self, path: str, content: bytes, _sync: bool | None = None
    ) -> Any:
        args = (path, seal(KIND, binding(path), content))
        try:
            return call_explicitly_sync_block_method(self.inner, "write_path", args, {})
        except Exception as exc:
            unsaved(KIND, binding(path), exc)
            return path


KIND = "checkpoint"


def binding(path: str) -> str:
    """What a checkpoint's tag is bound to: its key (the file name; Prefect passes a local
    folder's records by absolute path)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _checked(path: str, content: bytes) -> bytes:
    """The record Prefect may read: checked (FP517), authenticated (FP540), tag removed."""
    try:
        record = _parsed(content)
        check_parsed(record)
    except UntrustedCheckpoint as exc:
        _refuse(path, exc)
        raise
    try:
        return verified(KIND, binding(path), record)
    except ForgedEntry as exc:
        forged(KIND, path, str(exc), "the task runs again and replaces it")
        raise UntrustedCheckpoint(str(exc)) from None


def write_whole(target: Path, content: bytes) -> None:
    """Write ``content`` to ``target`` (0600, its folder 0700) through a temporary file and a
    rename: a failed write leaves the old file or none, never an empty or partial one."""
    if not target.parent.is_dir():  # one stat when it exists, not a refused mkdir and a stat
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    replace_whole(target, content)


def checkpoint_storage(storage: Any) -> Any:
    """The guarded result storage for ``storage`` (a folder ``Path``, or a storage block)."""
    if isinstance(storage, CheckpointStorage | CheckedStorage):
        return storage
    if isinstance(storage, str | Path):
        return CheckpointStorage(basepath=str(Path(storage).expanduser()))
    if isinstance(storage, LocalFileSystem) and type(storage) is LocalFileSystem:
        guarded: Any = CheckpointStorage(basepath=storage.basepath)
    else:
        guarded = CheckedStorage(inner=storage)
    # a saved block keeps its identity: the records name it, so any process can read them
    guarded._block_document_id = getattr(storage, "_block_document_id", None)
    return guarded


def flow_result_storage(storage: Any) -> Any:
    """The result storage a folpipe flow (or branch subflow) names: the run's checkpoint
    folder or saved block (its own result is never persisted: ``persist_result=False``).

    A flow naming none makes Prefect ask the server for its default result storage at every
    flow run, through a new synchronous client: a round trip per (sub)flow run, which a
    remote API (Prefect Cloud) pays in latency. An unsaved block cannot be named (Prefect
    refuses it)."""
    if getattr(storage, "_block_document_id", None) is not None:
        return storage
    if isinstance(storage, str | Path):
        return Path(storage)
    if isinstance(storage, LocalFileSystem) and storage.basepath:
        return Path(storage.basepath)
    return None
