"""Checkpoints on Prefect's result storage: JSON records checked before Prefect reads them,
restoring finished tasks without a task run each, and the key -> bytes store of journals.
"""

from __future__ import annotations

from ._files import SERIALIZER, CheckpointStorage, checkpoint_storage, flow_result_storage
from ._replay import ReplayMode, Restorer
from ._restore import CheckpointReader, NotRestorable, RecordingTracker, RestoredPass
from ._store import StorageFiles, journal_for

__all__ = [
    "SERIALIZER",
    "CheckpointReader",
    "CheckpointStorage",
    "NotRestorable",
    "RecordingTracker",
    "ReplayMode",
    "RestoredPass",
    "Restorer",
    "StorageFiles",
    "checkpoint_storage",
    "flow_result_storage",
    "journal_for",
]
