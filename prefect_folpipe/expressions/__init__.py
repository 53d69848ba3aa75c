"""Safe conditions for ``skip_if`` and ``until``: never ``eval()``.

Two forms compile to a :class:`Condition`:

* a string, a Python *expression* checked statically (AST walk) and then evaluated by
  ``simpleeval``: ``context.review.approved == true``,
  ``not any(e['task'] == 'fetch' for e in context.get('_errors', []))``;
* a structured mapping: ``{key: review.approved, equals: true}``, combined with
  ``{all: [...]}`` / ``{any: [...]}`` and negated with ``{not: {...}}``. ``exists`` /
  ``not_exists`` test whether the key is *present* (a key holding ``null`` exists);
* ``{type: python, expr: "..."}`` (folpipe 0.1.8's form): the string ``expr``, compiled as
  above (never ``eval()``).

In expressions ``context.a.b`` and ``context['a']['b']`` read the context, a missing key (at
any depth) reads as ``None``, ``true`` / ``false`` / ``null`` alias Python's constants, and
only whitelisted functions (``any``, ``all``, ``len``, ...) and read-only methods (``get``,
``keys``, ``lower``, ...) can be called. Dunder attributes, imports, lambdas, assignments and
any other call are rejected at compile time, so ``folpipe validate`` reports them (FP131).

Evaluation is bounded in time and memory (``expressions.bounds``): the *results* of ``**``,
``*``, ``<<`` and ``sum()`` are capped, every evaluation has a step budget and a deadline
(``Condition.evaluate(context, timeout=...)``; at most ``MAX_SECONDS``). A constant
sub-expression that breaks a bound (``4000000 ** 4000000``, ``sum([[0]*50000]*400, [])``) is
rejected at compile time (FP133), so ``folpipe validate`` reports it instead of a run hanging.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .condition import Condition, ExpressionError
from .size import check_structured
from .structured import compile_structured
from .text import compile_text
from .vocabulary import FUNCTIONS, METHODS, NAMES, OPERATORS

__all__ = [
    "FUNCTIONS",
    "METHODS",
    "NAMES",
    "OPERATORS",
    "Condition",
    "ExpressionError",
    "compile_condition",
]


def compile_condition(expr: str | Mapping[str, Any]) -> Condition:
    """Compile a ``skip_if`` / ``until`` condition, rejecting anything unsafe or malformed."""
    if isinstance(expr, str):
        return compile_text(expr)
    if isinstance(expr, Mapping):
        check_structured(expr)  # nesting and parts, before compiling it (FP134)
        return Condition(expr, compile_structured(expr))
    raise ExpressionError(
        f"a condition must be a string or a mapping, not {type(expr).__name__}",
        hint="write an expression such as `context.done == true` or {key: done, equals: true}",
    )
