"""Checkpoints on Prefect's result storage: JSON records checked before Prefect reads them,
restoring finished tasks without a task run each, and the key -> bytes store of journals.
"""

from __future__ import annotations

from ..storekey import store_key
from ._events import StoreEvents, collecting, current
from ._files import SERIALIZER, CheckpointStorage, checkpoint_storage, flow_result_storage
from ._guard import checkpoint_key_of, local_folder, own_checkpoint
from ._leases import BlockLocks, checkpoint_locks
from ._locks import CheckpointLocks
from ._replay import ReplayMode, Restorer
from ._restore import CheckpointReader, NotRestorable, RecordingTracker, RestoredPass
from ._store import StorageFiles, journal_for

__all__ = [
    "SERIALIZER",
    "BlockLocks",
    "CheckpointLocks",
    "CheckpointReader",
    "CheckpointStorage",
    "NotRestorable",
    "RecordingTracker",
    "ReplayMode",
    "RestoredPass",
    "Restorer",
    "StorageFiles",
    "StoreEvents",
    "checkpoint_key_of",
    "checkpoint_locks",
    "checkpoint_storage",
    "collecting",
    "current",
    "flow_result_storage",
    "journal_for",
    "local_folder",
    "own_checkpoint",
    "store_key",
]
