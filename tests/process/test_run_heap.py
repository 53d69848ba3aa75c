"""A run leaves the objects alive at its start out of garbage-collection passes, and puts
them back at its end; it never thaws objects someone else froze."""

from __future__ import annotations

import gc

import pytest

from prefect_folpipe._process.heap import older_objects_set_aside


@pytest.fixture(autouse=True)
def _thawed():  # type: ignore[no-untyped-def]
    gc.unfreeze()
    yield
    gc.unfreeze()


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_objects_alive_at_the_start_are_set_aside_and_put_back() -> None:
    before = Node()
    with older_objects_set_aside():
        assert gc.get_freeze_count() > 0
        assert not any(o is before for o in gc.get_objects())
        during = Node()  # made by the run: collected as usual
        assert any(o is during for o in gc.get_objects())
        del during
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == 0
    assert any(o is before for o in gc.get_objects())


def test_a_failing_run_puts_them_back_too() -> None:
    with pytest.raises(RuntimeError), older_objects_set_aside():
        raise RuntimeError("the run failed")
    assert gc.get_freeze_count() == 0


def test_a_freeze_made_by_someone_else_is_left_alone() -> None:
    gc.freeze()  # e.g. a pre-fork server, or another run in progress
    with older_objects_set_aside():
        pass
    assert gc.get_freeze_count() > 0  # still frozen: not thawed by the run
