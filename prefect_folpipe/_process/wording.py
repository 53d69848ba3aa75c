"""Counted nouns in what users read: ``1 pass``, ``2 passes``, never ``pass(es)``."""

from __future__ import annotations

IRREGULAR: dict[str, str] = {"pass": "passes", "is": "are", "was": "were"}
"""Last words whose plural is not ``+s`` (``recorded pass`` -> ``recorded passes``)."""


def noun(count: int, word: str, many: str | None = None) -> str:
    """``word`` for one, its plural otherwise (``many``, a known irregular one, or ``+s``)."""
    if count == 1:
        return word
    head, _, last = word.rpartition(" ")
    plural_last = IRREGULAR.get(last) or f"{last}s"
    return many or (f"{head} {plural_last}" if head else plural_last)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 task``, ``3 tasks``, ``0 passes``."""
    return f"{count} {noun(count, word, many)}"
