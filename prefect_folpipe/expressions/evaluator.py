"""simpleeval, bounded, with None-propagating context lookups and whitelisted methods."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import simpleeval

from .bounds import OPERATORS as BOUNDED_OPERATORS
from .bounds import Budget
from .condition import CONDITION_TIMEOUT, ExpressionError
from .vocabulary import FUNCTIONS, METHODS, NAMES


class Evaluator(simpleeval.EvalWithCompoundTypes):
    """simpleeval with None-propagating context lookups and whitelisted methods."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        operators = dict(BOUNDED_OPERATORS)
        super().__init__(
            operators=operators, functions=dict(FUNCTIONS), names={**NAMES, "context": context}
        )
        self.budget = Budget(CONDITION_TIMEOUT.get())

    def run(self, expr: str, tree: ast.Expression) -> Any:
        return self.eval(expr, previously_parsed=tree.body)

    def _eval(self, node: ast.AST) -> Any:
        self.budget.step()
        return super()._eval(node)

    def _check_disallowed_items(self, item: Any) -> None:
        """simpleeval walks every container a node returns (the whole context, each time it
        is read). Names and methods are whitelisted at compile time and context values are
        JSON data, so only the value itself can be a forbidden function or a module."""
        if callable(item) and item in simpleeval.DISALLOW_FUNCTIONS:
            raise simpleeval.FeatureNotAvailable("This function is forbidden")
        if isinstance(item, type(simpleeval)):
            raise simpleeval.FeatureNotAvailable("Sorry, modules are not allowed")

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        base = self._eval(node.value)
        if base is None:
            return None
        if isinstance(base, Mapping):
            if node.attr in base:
                return base[node.attr]
            return getattr(base, node.attr) if node.attr in METHODS else None
        if node.attr in METHODS and not node.attr.startswith("_"):
            return getattr(base, node.attr, None)
        raise ExpressionError(
            f"cannot read .{node.attr} of a {type(base).__name__}",
            code="FP132",
            hint="attributes read context keys; use len(...) or a whitelisted method",
        )

    def _eval_call(self, node: ast.Call) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in METHODS:
            # `context.get(...)` calls the method even when the context has a key "get"
            base = self._eval(func.value)
            method = getattr(base, func.attr, None) if base is not None else None
            if method is None:
                return None
            args = [self._eval(arg) for arg in node.args]
            kwargs = dict(self._eval(keyword) for keyword in node.keywords)
            return method(*args, **kwargs)
        return super()._eval_call(node)

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        container = self._eval(node.value)
        if container is None:
            return None
        key = self._eval(node.slice)
        try:
            return container[key]
        except (KeyError, IndexError):
            return None
