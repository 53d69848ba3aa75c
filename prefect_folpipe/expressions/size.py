"""Bounds on a condition's size and depth, checked before it is parsed (FP134).

The parser, the safety walk and the evaluator all recurse over the expression's tree, and a
folder under review may hold ``skip_if: not not not ... x`` 100,000 times or 100,000 terms.
So a string condition longer than :data:`MAX_CHARS`, or whose tokens nest brackets or chain
unary operators (``not``, ``-``, ``+``, ``~``) deeper than :data:`MAX_DEPTH`, is refused
before :func:`ast.parse` sees it; once parsed, its tree is measured (iteratively) before any
recursive pass, and a parser that gives up anyway (``RecursionError``, its stack overflowing
as ``MemoryError``) is the same error. A structured condition is measured the same way
(nesting of ``all`` / ``any`` / ``not``, and its number of parts).
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Mapping
from typing import Any

from .condition import ExpressionError

MAX_CHARS = 10_000
"""Longest string condition (a long one is a few hundred characters)."""
MAX_DEPTH = 64
"""Deepest nesting of a condition: brackets, unary operators, its syntax tree."""
MAX_PARTS = 10_000
"""Most parts (mappings, lists, strings) of a structured condition."""
CODE = "FP134"
HINT = (
    "keep a condition short and shallow: split it, or compute the value in a hook or an "
    "earlier task and test that"
)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_UNARY = frozenset({"-", "+", "~"})
_BEFORE_OPERAND = frozenset(
    {"(", "[", "{", ",", ":", "and", "or", "not", "in", "is", "if", "else", "lambda", "**"}
)


def too_big(reason: str) -> ExpressionError:
    return ExpressionError(f"the condition is too complex: {reason}", code=CODE, hint=HINT)


def check_text(expr: str) -> None:
    """Raise FP134 unless ``expr`` is within the bounds (nothing is parsed here)."""
    if len(expr) > MAX_CHARS:
        raise too_big(f"{len(expr):,} characters (at most {MAX_CHARS:,})")
    depth = token_depth(expr)
    if depth > MAX_DEPTH:
        raise too_big(f"it nests {depth} levels deep (at most {MAX_DEPTH})")


def token_depth(expr: str) -> int:
    """The deepest bracket nesting plus run of unary operators, from the tokens, up to the
    first level past :data:`MAX_DEPTH` (0 when the text holds too few brackets and operators
    to go that deep, or does not tokenize: the parser reports that)."""
    if sum(expr.count(c) for c in "([{-+~") + expr.count("not") <= MAX_DEPTH:
        return 0  # not enough openers to nest past the bound: no need to tokenize
    depth = deepest = run = 0
    previous = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(expr).readline):
            text = token.string
            if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER):
                continue
            unary = (text == "not" and previous != "is") or (
                text in _UNARY and (not previous or previous in _BEFORE_OPERAND or _is_op(previous))
            )
            run = run + 1 if unary else 0
            if text in _OPEN:
                depth += 1
            elif text in _CLOSE:
                depth = max(0, depth - 1)
            deepest = max(deepest, depth + run)
            if deepest > MAX_DEPTH:
                break  # refused whatever follows
            previous = text
    except (tokenize.TokenError, SyntaxError):
        return 0
    return deepest


def _is_op(text: str) -> bool:
    return not (text[0].isalnum() or text[0] in "_'\"" or text in _CLOSE)


def parse_bounded(text: str) -> ast.Expression:
    """``ast.parse(text, mode="eval")`` with the parser's own limits turned into FP134 and
    the tree's depth checked; ``SyntaxError`` as the parser raises it."""
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError):
        raise too_big("the parser gave up on it") from None
    depth = tree_depth(tree)
    if depth > MAX_DEPTH:
        raise too_big(f"its syntax tree is {depth} levels deep (at most {MAX_DEPTH})")
    return tree


def tree_depth(tree: ast.AST) -> int:
    """Depth of a syntax tree (iteratively: a deep tree cannot exhaust the stack here)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:  # deeper is refused anyway: no need to walk it all
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def check_structured(spec: Mapping[str, Any]) -> None:
    """Raise FP134 when a structured condition nests deeper than :data:`MAX_DEPTH` or has
    more than :data:`MAX_PARTS` parts; each string in it is checked when compiled."""
    parts = 0
    stack: list[tuple[Any, int]] = [(spec, 1)]
    while stack:
        item, depth = stack.pop()
        parts += 1
        if parts > MAX_PARTS:
            raise too_big(f"more than {MAX_PARTS:,} parts")
        if depth > MAX_DEPTH:
            raise too_big(f"it nests more than {MAX_DEPTH} levels deep")
        if isinstance(item, Mapping):
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
