"""The garbage collector around a load and a run.

A collection pass walks every object of the generations it covers. Two kinds of pass free
nothing here and cost much: one over what a load has just built (many small, long-lived
objects), and a full one over everything alive before a run (Prefect's modules, the loaded
workflow, the caller's data: ~200,000 objects, ~0.1 s a pass, seven passes in a 1,000-task
first run). Both are avoided with ``gc.freeze``, which moves every tracked object out of the
collector's passes, and ``gc.unfreeze``, which puts them back in the oldest generation.

Neither touches a freeze held by someone else (a pre-fork server, a run in progress): thawing
it is not theirs to do.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def _frozen_by_another() -> bool:
    return gc.get_freeze_count() > 0


@contextmanager
def collections_held() -> Iterator[None]:
    """No collection pass while the block builds, and none spent on what it built right after.

    Passes in the middle of a load cost ~20 % and free nothing. Left in the youngest
    generation, what it built would all be scanned by the next young pass (~30 ms for 1,000
    tasks) and again by the middle generation's; it is moved straight to the oldest generation
    instead (a freeze then a thaw: two list splices), where only a full collection looks at it.
    A caller's disabled collector stays disabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not _frozen_by_another():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


@contextmanager
def older_objects_set_aside() -> Iterator[None]:
    """Run the block with the objects alive now left out of garbage collection passes.

    Objects the run creates are collected as usual; those set aside are put back at its end,
    also when it fails."""
    if _frozen_by_another():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
