"""What an expression may name and call, and the structured form's operators."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .bounds import bounded_sum

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "any": any,
    "all": all,
    "len": len,
    "min": min,
    "max": max,
    "sum": bounded_sum,
    "abs": abs,
    "round": round,
    "sorted": sorted,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "set": set,
}
"""Functions an expression may call."""

METHODS: frozenset[str] = frozenset(
    {
        # mappings
        "get", "keys", "values", "items",
        # strings
        "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith",
        "split", "count", "find", "isdigit", "isalpha", "title",
        # sequences
        "index",
    }
)  # fmt: skip
"""Read-only methods an expression may call on context values."""

NAMES: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}

OPERATORS: tuple[str, ...] = (
    "equals",
    "not_equals",
    "contains",
    "exists",
    "not_exists",
    "greater_than",
    "less_than",
)
"""Operators of the structured condition form."""

ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call,
    ast.keyword, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Constant, ast.List,
    ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.GeneratorExp, ast.DictComp,
    ast.comprehension, ast.Load, ast.Store, ast.Starred,
    ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.expr_context,
)  # fmt: skip
UNSAFE_HINT = (
    "expressions may read `context` and call only any, all, len, min, max, sum, abs, round, "
    "sorted, str, int, float, bool, list, tuple, dict, set and read-only methods such as "
    ".get() / .keys() / .lower()"
)
