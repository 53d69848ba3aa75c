"""``workflow.memo.IdentityMemo``: a value computed once per object (the provider blobs,
typed provider blocks and config JSON that loads and re-runs share)."""

from __future__ import annotations

from prefect_folpipe._process.memo import IdentityMemo


class Box:
    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]  # like a pydantic model: unhashable


def test_once_per_object_not_per_equal_object_and_never_more_than_the_limit() -> None:
    calls: list[int] = []

    def double(box: Box) -> int:
        calls.append(box.value)
        return box.value * 2

    memo = IdentityMemo(double, limit=2)
    first = Box(1)
    assert memo(first) == 2 and memo(first) == 2 and calls == [1]
    assert memo(Box(1)) == 2 and calls == [1, 1]  # equal, but another object
    memo(Box(3))  # the limit is reached before this one: everything goes
    assert memo(first) == 2 and calls == [1, 1, 3, 1]


def test_an_entry_keeps_its_object_so_its_id_is_never_reused() -> None:
    memo = IdentityMemo(lambda box: box.value, limit=8)
    assert memo(Box(5)) == 5  # the Box lives on in the memo ...
    assert memo(Box(6)) == 6  # ... so a new one cannot take its id and read its value
