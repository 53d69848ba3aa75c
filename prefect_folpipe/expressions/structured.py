"""Structured conditions: ``{key: a.b, equals: 1}``, ``all`` / ``any`` / ``not``,
``{type: python, expr: ...}``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import did_you_mean
from .condition import ExpressionError
from .text import compile_text
from .vocabulary import OPERATORS

_STRUCTURED_KEYS = ("key", *OPERATORS, "all", "any", "not", "type", "expr")
_MISSING = object()


def compile_structured(spec: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    if "type" in spec or "expr" in spec:
        return _compile_typed(spec)
    unknown = [k for k in spec if k not in _STRUCTURED_KEYS]
    if unknown:
        raise _structure_error(f"unknown condition key {unknown[0]!r}", str(unknown[0]))
    groups = [k for k in ("all", "any", "not") if k in spec]
    if groups:
        if len(spec) != 1:
            raise _structure_error(f"{groups[0]!r} must be the only key of its condition")
        return _compile_group(groups[0], spec[groups[0]])
    ops = [k for k in OPERATORS if k in spec]
    if "key" not in spec or not isinstance(spec["key"], str) or not spec["key"].strip():
        raise _structure_error("a structured condition needs `key: <dotted.path>`")
    if len(ops) != 1:
        raise _structure_error(f"a condition needs exactly one operator of {', '.join(OPERATORS)}")
    return _compile_comparison(spec["key"], ops[0], spec[ops[0]])


def _compile_typed(spec: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Any]:
    """``{type: python, expr: "..."}``: the expression string, safely compiled."""
    kind = spec.get("type", "python")
    if kind != "python":
        raise _structure_error(f"unknown condition type {kind!r}", str(kind))
    extra = [k for k in spec if k not in ("type", "expr")]
    if extra:
        raise _structure_error(f"`type: python` takes only `expr`, not {extra[0]!r}")
    expr = spec.get("expr")
    if not isinstance(expr, str) or not expr.strip():
        raise _structure_error("`type: python` needs `expr: <expression>`")
    return compile_text(expr)._check


def _compile_group(kind: str, value: Any) -> Callable[[Mapping[str, Any]], bool]:
    if kind == "not":
        if not isinstance(value, Mapping):
            raise _structure_error("`not` takes one condition mapping")
        inner = compile_structured(value)
        return lambda context: not inner(context)
    if not isinstance(value, list) or not value:
        raise _structure_error(f"`{kind}` takes a non-empty list of conditions")
    parts = [_compile_item(item) for item in value]
    combine = all if kind == "all" else any
    return lambda context: combine(bool(part(context)) for part in parts)


def _compile_comparison(key: str, op: str, expected: Any) -> Callable[[Mapping[str, Any]], bool]:
    parts = key.strip().split(".")
    if parts[0] == "context" and len(parts) > 1:
        parts = parts[1:]
    if any(not p or p.startswith("__") for p in parts):
        raise _structure_error(f"invalid key path {key!r}")

    def check(context: Mapping[str, Any]) -> bool:
        if op in ("exists", "not_exists"):
            present = _lookup(context, parts, _MISSING) is not _MISSING
            return present == bool(expected) if op == "exists" else present != bool(expected)
        return _apply(op, _lookup(context, parts), expected)

    return check


def _lookup(context: Mapping[str, Any], parts: list[str], missing: Any = None) -> Any:
    """The value at the dotted path, or ``missing`` when some step is absent."""
    value: Any = context
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(value) <= index < len(value):
                return missing
            value = value[index]
        else:
            return missing
    return value


def _apply(op: str, actual: Any, expected: Any) -> bool:
    if op == "equals":
        return bool(actual == expected)
    if op == "not_equals":
        return bool(actual != expected)
    if op == "contains":
        return actual is not None and _contains(actual, expected)
    if actual is None:
        return False
    try:
        return bool(actual > expected) if op == "greater_than" else bool(actual < expected)
    except TypeError as exc:
        raise ExpressionError(
            f"cannot compare {actual!r} with {expected!r}: {exc}", code="FP132"
        ) from None


def _contains(actual: Any, expected: Any) -> bool:
    try:
        return expected in actual
    except TypeError:
        return False


def _structure_error(message: str, near: str | None = None) -> ExpressionError:
    hint = "write {key: review.approved, equals: true}; combine with all: [...] / any: [...]"
    if near:
        close = did_you_mean(near, _STRUCTURED_KEYS)
        if close:
            hint = f"{close} " + hint
    return ExpressionError(message, hint=hint)


def _compile_item(item: Any) -> Callable[[Mapping[str, Any]], Any]:
    """One member of ``all`` / ``any``: an expression string or a structured condition."""
    if isinstance(item, str):
        return compile_text(item)._check
    if isinstance(item, Mapping):
        return compile_structured(item)
    raise _structure_error(f"a condition must be a string or a mapping, not {type(item).__name__}")
