"""Reading JSON back from a store, within bounds: any damage is a miss, never an exception.

A run reads what earlier runs stored: checkpoint records, journal entries, approval answers,
run records, manifests. Whoever can write the store (a shared folder, a result-storage block,
a committed ``.folpipe/``), a full disk or a crash mid-write can leave anything there: a
truncated file, a pickle, 200,000 ``[``, a gigabyte. :func:`load_stored` reads a stored value
only when it is JSON of at most :data:`MAX_BYTES` bytes nested at most :data:`MAX_DEPTH`
levels; anything else raises :class:`DamagedEntry` (a ``ValueError``) with the reason, so the
caller treats it as absent and warns once (code :data:`DAMAGED`): no ``RecursionError`` or
``MemoryError`` comes out of it, and a file is never read past the bound.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from .files import read_regular

MAX_BYTES = 64 * 1024 * 1024
"""Largest stored entry read (a run record with a big context, a long model answer)."""
MAX_DEPTH = 512
"""Deepest nesting of lists and objects read (a context may hold 100 levels; entries wrap
it in a few more)."""
DAMAGED = "FP527"
"""The warning of a damaged entry: ignored, as if it were not there."""


class DamagedEntry(ValueError):
    """A stored entry that cannot be used (not JSON, too large, nested too deeply)."""

    code = DAMAGED


def load_stored(
    data: bytes | str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """The JSON value ``data`` holds; :class:`DamagedEntry` when it is not one within bounds."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise DamagedEntry(f"it is larger than {max_bytes:,} bytes")
    try:  # the C decoder counts its nesting against the recursion limit: it stops, not crashes
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DamagedEntry(f"it is not JSON ({type(exc).__name__})") from None
    except (RecursionError, MemoryError):
        raise DamagedEntry("it is nested too deeply") from None
    if raw.count(b"[") + raw.count(b"{") > max_depth and _deeper(value, max_depth):
        raise DamagedEntry(f"it is nested deeper than {max_depth} levels")
    return value


def _deeper(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests lists and objects deeper than ``max_depth`` (iteratively)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def read_stored_file(path: Path, *, max_bytes: int = MAX_BYTES) -> Any:
    """:func:`load_stored` of a file, reading at most ``max_bytes + 1`` bytes of it
    (``OSError`` when it cannot be read)."""
    return load_stored(read_regular(path, max_bytes + 1), max_bytes=max_bytes)


def warn_damaged(log: logging.Logger, what: str, exc: DamagedEntry, then: str) -> None:
    """The one coded warning of a damaged entry (``then``: what happens instead)."""
    log.warning("[%s] ignoring %s: %s; %s", DAMAGED, what, exc, then)
