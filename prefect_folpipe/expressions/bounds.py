"""CPU and memory bounds of condition evaluation (used by ``expressions``).

simpleeval caps the *operands* of ``**`` (4,000,000) but not the size of the result:
``4000000 ** 4000000`` is a 26-million-digit number that takes a minute to compute. Here every
operation that can grow a value is bounded by the size of its *result*:

* ``**``, ``*``, ``<<`` on integers: at most :data:`MAX_INT_BITS` bits;
* ``*`` and ``+`` on strings, lists and tuples, and ``sum()`` of sequences: at most
  ``simpleeval.MAX_STRING_LENGTH`` items (``sum`` concatenates in linear time);
* every evaluation: at most :data:`MAX_STEPS` evaluated nodes (comprehensions that filter
  everything out do not grow a result, but they cost time) and :data:`MAX_SECONDS` of wall
  time, or the caller's shorter ``timeout``.

A bound that is exceeded raises :class:`BoundExceeded`.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

import simpleeval

MAX_INT_BITS = 16_384
"""Largest integer an expression may build (about 4,900 decimal digits)."""
MAX_LENGTH = simpleeval.MAX_STRING_LENGTH
MAX_STEPS = 1_000_000
MAX_SECONDS = 10.0
CHECK_EVERY = 256
"""Nodes evaluated between two looks at the clock."""


class BoundExceeded(simpleeval.InvalidExpression):
    """An evaluation would take too much time or memory."""


def _int_bits(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value.bit_length()


def bounded_pow(base: Any, exponent: Any) -> Any:
    bits = _int_bits(base)
    exponent_is_int = _int_bits(exponent) is not None
    if bits is not None and bits > 1 and exponent_is_int and (bits - 1) * exponent > MAX_INT_BITS:
        raise BoundExceeded(f"{base} ** {exponent} is too large to compute")
    return simpleeval.safe_power(base, exponent)


def bounded_mult(left: Any, right: Any) -> Any:
    left_bits, right_bits = _int_bits(left), _int_bits(right)
    if left_bits is not None and right_bits is not None and left_bits + right_bits > MAX_INT_BITS:
        raise BoundExceeded("the product is too large to compute")
    for sequence, count in ((left, right), (right, left)):
        repeats = isinstance(sequence, str | list | tuple) and _int_bits(count) is not None
        if repeats and len(sequence) * count > MAX_LENGTH:
            raise BoundExceeded(f"repeating a sequence past {MAX_LENGTH:,} items")
    return simpleeval.safe_mult(left, right)


def bounded_lshift(left: Any, right: Any) -> Any:
    bits = _int_bits(left)
    if bits is not None and _int_bits(right) is not None and bits + right > MAX_INT_BITS:
        raise BoundExceeded(f"{left} << {right} is too large to compute")
    return operator.lshift(left, right)


def bounded_sum(items: Iterable[Any], start: Any = 0) -> Any:
    """``sum()``; sequences are concatenated in linear time, up to ``MAX_LENGTH`` items."""
    if not isinstance(start, str | list | tuple):
        total = start
        for item in items:
            total = total + item
            bits = _int_bits(total)
            if bits is not None and bits > MAX_INT_BITS:
                raise BoundExceeded("the sum is too large")
            if isinstance(total, str | list | tuple):
                raise BoundExceeded("sum() of sequences needs a sequence start, e.g. sum(x, [])")
        return total
    if isinstance(start, str):
        raise TypeError("sum() can't sum strings")
    parts: list[Any] = list(start)
    for item in items:
        if not isinstance(item, list | tuple):
            raise BoundExceeded(f"sum() of sequences met a {type(item).__name__}")
        if len(parts) + len(item) > MAX_LENGTH:
            raise BoundExceeded(f"sum() would build more than {MAX_LENGTH:,} items")
        parts.extend(item)
    return tuple(parts) if isinstance(start, tuple) else parts


_FORMAT_WIDTHS = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def bounded_mod(left: Any, right: Any) -> Any:
    """``%`` like the other operators: a format cannot pad past the length cap."""
    if isinstance(left, str):
        for match in _FORMAT_WIDTHS.finditer(left):
            for size in match.groups():
                if size == "*" or (size and int(size) > MAX_LENGTH):
                    raise simpleeval.IterableTooLong("format width or precision too large")
    return left % right


OPERATORS: dict[type, Any] = {
    **simpleeval.DEFAULT_OPERATORS,
    ast.Pow: bounded_pow,
    ast.Mult: bounded_mult,
    ast.LShift: bounded_lshift,
    ast.Mod: bounded_mod,
}
"""simpleeval's operators with every growing one bounded by the size of its result."""


def constant_parts(node: ast.AST, constants: set[str]) -> Iterator[ast.expr]:
    """The largest sub-expressions of ``node`` whose names are all in ``constants`` (they do
    not read the context, so their value is the same on every evaluation)."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if isinstance(node, ast.expr) and names <= constants:
        if not isinstance(node, ast.Constant | ast.Name):
            yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from constant_parts(child, constants)


class Budget:
    """Steps and a deadline for one evaluation."""

    def __init__(self, timeout: float | None = None) -> None:
        limit = MAX_SECONDS if timeout is None else max(0.0, min(timeout, MAX_SECONDS))
        self.seconds = limit
        self.deadline = time.monotonic() + limit
        self.steps = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise BoundExceeded(f"the expression took more than {MAX_STEPS:,} steps")
        if self.steps % CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise BoundExceeded(f"the expression took longer than {_seconds(self.seconds)}")


def _seconds(value: float) -> str:
    return f"{value:g}s" if math.isfinite(value) else "its time limit"
