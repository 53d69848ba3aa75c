"""Values computed once per object, for objects that never change once built (frozen
configs, resolved providers): the loader hands back the same objects for an unchanged folder,
so a second load or a re-run reuses what the first one derived from them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``compute(obj)`` once per object, keyed by its identity. An entry holds its object, so
    the id stays that object's while the entry lives; all entries go when ``limit`` is
    reached."""

    def __init__(self, compute: Callable[[K], V], limit: int) -> None:
        self.compute = compute
        self.limit = limit
        self._entries: dict[int, tuple[K, V]] = {}

    def __call__(self, obj: K) -> V:
        found = self._entries.get(id(obj))
        if found is None:
            if len(self._entries) >= self.limit:
                self._entries.clear()
            found = self._entries[id(obj)] = (obj, self.compute(obj))
        return found[1]
