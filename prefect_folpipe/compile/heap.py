"""The garbage collector during a run.

A full (oldest-generation) collection walks every object the process holds: after Prefect is
imported and a workflow loaded that is ~200,000 objects, ~0.1 s a pass, and a run allocating
steadily triggers such passes (a cached re-run of 200 tasks: one in four paid one; a
1,000-task first run: seven, ~1.8 s). Nothing alive when the run starts (modules, the loaded
workflow, the caller's data) is garbage the run can free, so for the run's duration those
objects are moved out of the collector's passes (``gc.freeze``) and put back at its end.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def older_objects_set_aside() -> Iterator[None]:
    """Run the block with the objects alive now left out of garbage collection passes.

    Objects the run creates are collected as usual. Left alone when something in the process
    froze objects already (a pre-fork server, another run in progress): the end of this
    block must not thaw what it did not freeze."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
