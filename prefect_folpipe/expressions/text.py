"""String expressions: parsed, checked statically (AST walk), evaluated bounded."""

from __future__ import annotations

import ast
from functools import lru_cache

from ..errors import did_you_mean
from .bounds import BoundExceeded, constant_parts
from .condition import Condition, ExpressionError, shown
from .evaluator import Evaluator
from .size import check_text, parse_bounded
from .vocabulary import ALLOWED_NODES, FUNCTIONS, METHODS, NAMES, UNSAFE_HINT


@lru_cache(maxsize=2048)
def compile_text(expr: str) -> Condition:
    """Compiled once per distinct text: a tree of many tasks often repeats one condition."""
    check_text(expr)  # size and nesting, before anything parses it (FP134)
    tree = _parse(expr)
    _check_safe(tree, expr)
    _check_constants(tree, expr)
    return Condition(expr, lambda context: Evaluator(context).run(expr, tree))


def _parse(expr: str) -> ast.Expression:
    text = expr.strip()
    if not text:
        raise ExpressionError("the expression is empty", hint="write e.g. `context.done == true`")
    try:
        return parse_bounded(text)
    except SyntaxError as exc:
        _reject_statement(text)
        raise ExpressionError(
            f"cannot parse expression {expr!r}: {exc.msg}",
            hint="a condition is one Python expression, e.g. `context.score > 3`",
        ) from None


def _reject_statement(text: str) -> None:
    """Statements (imports, assignments) parse in exec mode: call them unsafe, not garbled."""
    try:
        module = ast.parse(text, mode="exec")
    except (SyntaxError, RecursionError, MemoryError):
        return
    for node in ast.walk(module):
        if isinstance(node, ast.Import | ast.ImportFrom):
            raise ExpressionError(
                f"imports are not allowed in expressions: {text!r}",
                code="FP131",
                hint=UNSAFE_HINT,
            )
    raise ExpressionError(
        f"statements are not allowed, only one expression: {text!r}",
        code="FP131",
        hint="a condition is one expression; assignments and other statements are rejected",
    )


def _check_safe(tree: ast.Expression, expr: str) -> None:
    bound = {
        name.id
        for comp in ast.walk(tree)
        if isinstance(comp, ast.comprehension)
        for name in ast.walk(comp.target)
        if isinstance(name, ast.Name)
    }
    known = {"context", *NAMES, *FUNCTIONS, *bound}
    for node in ast.walk(tree):
        problem = _unsafe_node(node, known)
        if problem:
            raise ExpressionError(f"{problem} in {expr!r}", code="FP131", hint=UNSAFE_HINT)


def _unsafe_node(node: ast.AST, known: set[str]) -> str | None:
    if not isinstance(node, ALLOWED_NODES):
        return f"{type(node).__name__} is not allowed"
    if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
        return f"access to {node.attr!r} is not allowed"
    if isinstance(node, ast.Name) and node.id not in known:
        close = did_you_mean(node.id, sorted(known))
        suggestion = f" ({close})" if close else ""
        return f"unknown name {node.id!r}{suggestion}; read values as context.{node.id}"
    if isinstance(node, ast.Call):
        return _unsafe_call(node)
    return None


def _unsafe_call(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return None if func.id in FUNCTIONS else f"calling {func.id!r} is not allowed"
    if isinstance(func, ast.Attribute):
        return None if func.attr in METHODS else f"calling .{func.attr}() is not allowed"
    return "calling the result of an expression is not allowed"


def _check_constants(tree: ast.Expression, expr: str) -> None:
    """Evaluate (bounded) every largest sub-expression that does not read ``context``: one
    that exceeds a bound would do so on every run, so it is an author error (FP133)."""
    for node in constant_parts(tree.body, {*NAMES, *FUNCTIONS}):
        try:
            Evaluator({}).run(expr, ast.Expression(node))
        except BoundExceeded as exc:
            raise ExpressionError(
                f"{shown(ast.unparse(node))} cannot be evaluated: {exc}",
                code="FP133",
                hint="conditions are checked at run time on every task; keep numbers below "
                "2**16384 and sequences below 100,000 items",
            ) from None
        except Exception:  # anything else is reported where it is evaluated (FP132)
            continue
