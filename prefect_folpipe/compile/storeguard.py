"""A pass's checkpoint, seen from the executor: its key, and whether it was kept.

Prefect writes a pass's checkpoint when its task run ends; a write that fails (a full disk) is
reported by the checkpoint storage itself (FP541, ``compile.checkpoints``). A pass that ran in
another process (a Dask worker) reports there, so for a local checkpoint folder the executor
also looks for the file once the pass has completed. Either way the run's report names the
task (``storeevents.StoreEvents.claim``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prefect.cache_policies import NO_CACHE

from ..workflow.tree import Task
from .checkpoints import CheckpointStorage
from .storeevents import current, unsaved


def checkpoint_key_of(options: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """The checkpoint key a leaf with these Prefect ``options`` uses for ``parameters``
    (``None`` with checkpoints off)."""
    key_fn = options.get("cache_key_fn")
    if key_fn is None or options.get("cache_policy") is NO_CACHE:
        return None
    try:
        return key_fn(None, dict(parameters)) or None
    except Exception:  # the task run computes it again and reports what is wrong
        return None


def local_file(storage: Any, key: str) -> str | None:
    """Where a local checkpoint folder keeps ``key`` (``None`` for a storage block)."""
    if isinstance(storage, CheckpointStorage):
        return os.path.join(os.path.expanduser(storage.basepath or "."), key)
    return None


def account_checkpoint(storage: Any, task: Task, key: str, status: str) -> None:
    """After a pass: its store events name ``task``; a completed pass whose local checkpoint
    is missing is reported not durable (FP541)."""
    events = current()
    if events is None:
        return
    if status == "completed" and not events.unsaved(key):
        path = local_file(storage, key)
        if path is not None and not os.path.isfile(path):
            missing = FileNotFoundError(f"no checkpoint file after the pass: {path}")
            unsaved("checkpoint", key, missing, task.path)
    events.claim(key, task.path)
