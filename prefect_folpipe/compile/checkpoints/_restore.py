"""Reading pass checkpoints back without a Prefect task run (for ``_replay.Restorer``).

A cached pass that goes through Prefect still costs a task run (state events, a storage read
through a worker thread), so a fully cached re-run would cost nearly as much as the first
run. :class:`CheckpointReader` reads the record a pass would reuse straight from the leaf's
result store, with the leaf's own cache key (so a key change anywhere applies here too);
:class:`RecordingTracker` holds what a replayed subtree reports until the whole subtree came
back, then commits it to the run's tracker exactly as a run would have left it.

Reads go through Prefect's ``ResultStore`` for the leaf's own storage and serializer; a local
folder is listed once per run, so a miss costs a set lookup (a checkpoint written later in
the run is simply not restored from here: Prefect's own lookup still finds it).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect._internal.compatibility.blocks import call_explicitly_sync_block_method
from prefect.cache_policies import NO_CACHE
from prefect.filesystems import LocalFileSystem
from prefect.results import ResultRecord, get_result_store
from prefect.settings import PREFECT_TASKS_REFRESH_CACHE

from ...workflow.tree import Task
from ..report import RunTracker, Status, TaskRecord


class NotRestorable(BaseException):
    """A pass without a usable checkpoint: the replay stops. A ``BaseException`` so that no
    ``except Exception`` on the way (a child's failure handling) turns it into a failure."""


@dataclass(frozen=True)
class RestoredPass:
    """One pass (or skip) a restore brought back, for the restored run's artifact."""

    path: str
    label: str
    status: str
    key: str = ""
    where: str = ""


@dataclass(frozen=True)
class _Hit:
    key: str
    payload: dict[str, Any]
    where: str


class CheckpointReader:
    """Reads pass checkpoints for one run: the key from the leaf's options (its
    ``cache_key_fn``), the record from its result store; hits and misses remembered by key."""

    def __init__(self) -> None:
        self._stores: dict[int, Any] = {}
        self._listings: dict[str, frozenset[str]] = {}
        self._seen: dict[str, _Hit | None] = {}
        self._refresh_setting: bool | None = None

    async def read(
        self, options: Mapping[str, Any], parameters: dict[str, Any], leaf: Callable[[], Any]
    ) -> _Hit | None:
        """The checkpoint the pass with these task ``options`` would reuse when called with
        ``parameters``, or ``None`` (``leaf()`` builds its Prefect task: the first read
        resolves the result store from it)."""
        key_fn = options.get("cache_key_fn")
        if key_fn is None or options.get("cache_policy") is NO_CACHE or self._refreshes(options):
            return None
        try:
            key = key_fn(None, parameters)
        except Exception:
            return None
        if not key:
            return None
        if key not in self._seen:
            self._seen[key] = await self._load(options, leaf, key)
        return self._seen[key]

    async def _load(self, options: Mapping[str, Any], leaf: Callable[[], Any], key: str) -> Any:
        store = await self._store(options, leaf)
        storage = store.result_storage
        try:
            if isinstance(storage, LocalFileSystem):
                folder = Path(storage.basepath or ".").expanduser()
                if key not in self._listing(folder):
                    return None
                # a local file: read in place (through the block: it may check the record)
                content = call_explicitly_sync_block_method(storage, "read_path", (key,), {})
                record = ResultRecord.deserialize(content, backup_serializer=store.serializer)
                where = str(folder / key)
            else:
                record = await store.aread(key)
                where = f"{type(storage).__name__} {key}"
        except Exception:  # missing, unreadable or refused (the normal path reports it)
            return None
        expiration = record.metadata.expiration
        if expiration is not None and expiration <= datetime.now(UTC):
            return None
        payload = record.result
        if not isinstance(payload, dict) or not isinstance(payload.get("delta"), dict):
            return None
        return _Hit(key, payload, where)

    async def _store(self, options: Mapping[str, Any], leaf: Callable[[], Any]) -> Any:
        marker = id(options.get("result_storage"))
        store = self._stores.get(marker)
        if store is None:
            store = self._stores[marker] = await get_result_store().aupdate_for_task(leaf())
        return store

    def _refreshes(self, options: Mapping[str, Any]) -> bool:
        """``refresh_cache`` (``--fresh``), else Prefect's setting (read once per run: a
        setting's ``value()`` costs about as much as reading a checkpoint)."""
        refresh = options.get("refresh_cache")
        if refresh is not None:
            return bool(refresh)
        if self._refresh_setting is None:
            self._refresh_setting = bool(PREFECT_TASKS_REFRESH_CACHE.value())
        return self._refresh_setting

    def _listing(self, folder: Path) -> frozenset[str]:
        """The checkpoint files of a local folder, listed once per run."""
        listing = self._listings.get(str(folder))
        if listing is None:
            try:
                listing = frozenset(os.listdir(folder))
            except OSError:
                listing = frozenset()
            self._listings[str(folder)] = listing
        return listing


class _ScratchRecords(dict[str, TaskRecord]):
    """Copies of the run's records, made on first use."""

    def __init__(self, real: dict[str, TaskRecord]) -> None:
        super().__init__()
        self.real = real

    def __missing__(self, path: str) -> TaskRecord:
        record = self.real[path]
        copy = self[path] = dataclasses.replace(record, executions=list(record.executions))
        return copy


class RecordingTracker(RunTracker):
    """A tracker over scratch copies of the run's records that remembers every change, to
    replay them on the run's tracker once the restore succeeds (so the records and the live
    view's events are exactly those of a run)."""

    def __init__(self, real: RunTracker) -> None:
        super().__init__(())
        self.records = _ScratchRecords(real.records)
        self.real = real
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def commit(self) -> None:
        for name, args, kwargs in self.calls:
            getattr(self.real, name)(*args, **kwargs)

    def _note(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))

    def start(self, path: str, iteration: int | None = None) -> None:
        self._note("start", path, iteration)
        super().start(path, iteration)

    def finish(self, path: str, status: Status, *, error: str | None = None) -> None:
        self._note("finish", path, status, error=error)
        super().finish(path, status, error=error)

    def iteration_started(self, path: str, number: int) -> None:
        self._note("iteration_started", path, number)
        super().iteration_started(path, number)

    def add_iterations(self, path: str, number: int) -> None:  # count_iteration comes here
        self._note("add_iterations", path, number)
        super().add_iterations(path, number)

    def skip_tree(self, task: Task, reason: str | None) -> None:
        self._note("skip_tree", task, reason)
        for node in task.walk():  # the scratch records, without replaying each finish
            if node.path == task.path:
                RunTracker.finish(self, node.path, "skipped", error=reason)
            elif self.records[node.path].status == "pending":
                self.records[node.path].error = reason
