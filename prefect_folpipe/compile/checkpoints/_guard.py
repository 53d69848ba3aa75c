"""A pass's checkpoint, seen from the executor: its key, and whose it is.

Prefect writes a pass's checkpoint when its task run's transaction commits: at once for a
task at the top, when the enclosing branch ends for one inside a branch task. A write that
fails (a full disk) is reported by the checkpoint storage itself (FP541,
``compile.checkpoints``); the executor says beforehand which task each key belongs to, so
the run's report names it. A pass run on a Dask worker writes (and reports) there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prefect.cache_policies import NO_CACHE

from ...workflow.tree import Task
from . import CheckpointStorage
from ._events import current


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


def local_folder(storage: Any) -> str | None:
    """The local checkpoint folder of ``storage`` (``None`` for a storage block)."""
    if isinstance(storage, CheckpointStorage):
        return os.path.expanduser(storage.basepath or ".")
    return None


def own_checkpoint(task: Task, key: str) -> None:
    """Store events about checkpoint ``key`` name ``task``."""
    events = current()
    if events is not None:
        events.own(key, task.path)
