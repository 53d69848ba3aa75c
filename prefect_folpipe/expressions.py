"""Safe conditions for ``skip_if`` and ``until`` (ARCHITECTURE §4): never ``eval()``.

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

Evaluation is bounded in time and memory (``expression_bounds``): the *results* of ``**``,
``*``, ``<<`` and ``sum()`` are capped, every evaluation has a step budget and a deadline
(``Condition.evaluate(context, timeout=...)``; at most ``MAX_SECONDS``). A constant
sub-expression that breaks a bound (``4000000 ** 4000000``, ``sum([[0]*50000]*400, [])``) is
rejected at compile time (FP133), so ``folpipe validate`` reports it instead of a run hanging.
"""

from __future__ import annotations

import ast
import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import simpleeval

from .errors import FolpipeError, did_you_mean
from .expression_bounds import OPERATORS as BOUNDED_OPERATORS
from .expression_bounds import BoundExceeded, Budget, bounded_sum, constant_parts

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

_ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call,
    ast.keyword, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Constant, ast.List,
    ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.GeneratorExp, ast.DictComp,
    ast.comprehension, ast.Load, ast.Store, ast.Starred,
    ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.expr_context,
)  # fmt: skip
_UNSAFE_HINT = (
    "expressions may read `context` and call only any, all, len, min, max, sum, abs, round, "
    "sorted, str, int, float, bool, list, tuple, dict, set and read-only methods such as "
    ".get() / .keys() / .lower()"
)


class ExpressionError(FolpipeError):
    """An expression or structured condition that cannot be compiled or evaluated.

    ``code`` is FP130 (unparsable), FP131 (unsafe), FP132 (failed while evaluating) or FP133
    (a constant part exceeds the evaluation bounds).
    """

    code = "FP130"


@dataclass(frozen=True)
class Condition:
    """A compiled condition; :meth:`evaluate` answers it against a context."""

    source: str | Mapping[str, Any]
    _check: Callable[[Mapping[str, Any]], Any]

    def evaluate(self, context: Mapping[str, Any], *, timeout: float | None = None) -> bool:
        """Truth of the condition for ``context``; ExpressionError (FP132) if it cannot say,
        or if it runs past ``timeout`` seconds (at most ``expression_bounds.MAX_SECONDS``)."""
        token = _TIMEOUT.set(timeout)
        try:
            return bool(self._check(context))
        except ExpressionError:
            raise
        except Exception as exc:  # any evaluation failure is the author's
            raise ExpressionError(
                f"condition {_shown(self.source)} failed: {type(exc).__name__}: {exc}",
                code="FP132",
                hint="guard missing values, e.g. `(context.x or 0) > 3`; keep numbers and "
                "sequences small",
            ) from None
        finally:
            _TIMEOUT.reset(token)


_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "folpipe_condition_timeout", default=None
)


def _shown(source: str | Mapping[str, Any], limit: int = 200) -> str:
    text = repr(source)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compile_condition(expr: str | Mapping[str, Any]) -> Condition:
    """Compile a ``skip_if`` / ``until`` condition, rejecting anything unsafe or malformed."""
    if isinstance(expr, str):
        return _compile_text(expr)
    if isinstance(expr, Mapping):
        return Condition(expr, _compile_structured(expr))
    raise ExpressionError(
        f"a condition must be a string or a mapping, not {type(expr).__name__}",
        hint="write an expression such as `context.done == true` or {key: done, equals: true}",
    )


# --- string expressions -------------------------------------------------------------------


@lru_cache(maxsize=2048)
def _compile_text(expr: str) -> Condition:
    """Compiled once per distinct text: a tree of many tasks often repeats one condition."""
    tree = _parse(expr)
    _check_safe(tree, expr)
    _check_constants(tree, expr)
    return Condition(expr, lambda context: _Evaluator(context).run(expr, tree))


def _parse(expr: str) -> ast.Expression:
    text = expr.strip()
    if not text:
        raise ExpressionError("the expression is empty", hint="write e.g. `context.done == true`")
    try:
        return ast.parse(text, mode="eval")
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
    except SyntaxError:
        return
    for node in ast.walk(module):
        if isinstance(node, ast.Import | ast.ImportFrom):
            raise ExpressionError(
                f"imports are not allowed in expressions: {text!r}",
                code="FP131",
                hint=_UNSAFE_HINT,
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
            raise ExpressionError(f"{problem} in {expr!r}", code="FP131", hint=_UNSAFE_HINT)


def _unsafe_node(node: ast.AST, known: set[str]) -> str | None:
    if not isinstance(node, _ALLOWED_NODES):
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
            _Evaluator({}).run(expr, ast.Expression(node))
        except BoundExceeded as exc:
            raise ExpressionError(
                f"{_shown(ast.unparse(node))} cannot be evaluated: {exc}",
                code="FP133",
                hint="conditions are checked at run time on every task; keep numbers below "
                "2**16384 and sequences below 100,000 items",
            ) from None
        except Exception:  # anything else is reported where it is evaluated (FP132)
            continue


_MISSING = object()
class _Evaluator(simpleeval.EvalWithCompoundTypes):
    """simpleeval with None-propagating context lookups and whitelisted methods."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        operators = dict(BOUNDED_OPERATORS)
        super().__init__(
            operators=operators, functions=dict(FUNCTIONS), names={**NAMES, "context": context}
        )
        self.budget = Budget(_TIMEOUT.get())

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


# --- structured conditions ----------------------------------------------------------------

_STRUCTURED_KEYS = ("key", *OPERATORS, "all", "any", "not", "type", "expr")
_MISSING = object()


def _compile_structured(spec: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
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
    return _compile_text(expr)._check


def _compile_group(kind: str, value: Any) -> Callable[[Mapping[str, Any]], bool]:
    if kind == "not":
        if not isinstance(value, Mapping):
            raise _structure_error("`not` takes one condition mapping")
        inner = _compile_structured(value)
        return lambda context: not inner(context)
    if not isinstance(value, list) or not value:
        raise _structure_error(f"`{kind}` takes a non-empty list of conditions")
    parts = [compile_condition(item)._check for item in value]
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
