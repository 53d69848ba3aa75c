"""Plain JSON data: what a context, a replies file and a model's answer may hold.

Everything that flows through a run's context is checkpointed as JSON and printed by
``folpipe run --json``, so it must be *strict* JSON: objects with string keys, lists, strings,
finite numbers, booleans and null, nested at most :data:`MAX_DEPTH` levels. ``NaN`` /
``Infinity`` (which Python's ``json`` writes but no JSON parser has to read), YAML's dates,
``!!binary`` and ``!!set``, and structures deep enough to exhaust the interpreter's recursion
are refused here with a message naming where the value is, so callers can raise a coded error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import yaml

MAX_DEPTH = 100
"""Deepest nesting of lists and objects a context value may have."""


class NotPlainJSON(ValueError):
    """A value that is not strict JSON data; the message says where and why."""


def check_plain(value: Any, where: str = "value", *, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`NotPlainJSON` unless ``value`` is strict JSON data (iteratively: a
    hostile depth cannot exhaust the stack here)."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise NotPlainJSON(f"{path} is {item!r}, which JSON cannot hold")
            continue
        if not isinstance(item, Mapping | list | tuple):
            raise NotPlainJSON(f"{path} is a {_kind(item)}, which JSON cannot hold")
        if depth >= max_depth:
            raise NotPlainJSON(f"{path} is nested deeper than {max_depth} levels")
        if isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise NotPlainJSON(f"{path} has a key {key!r} that is not a string")
                stack.append((child, f"{path}.{key}", depth + 1))
        else:
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))


def _kind(value: Any) -> str:
    names = {"date": "date", "datetime": "date-time", "bytes": "binary (!!binary)"}
    name = type(value).__name__
    if isinstance(value, set | frozenset):
        return "set (!!set)"
    return names.get(name, name)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotPlainJSON(f"the number {text} is too large for JSON")
    return number


def _constant(name: str) -> Any:
    raise NotPlainJSON(f"{name} is not a JSON value")


def loads(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity``, overflowing numbers and nesting the
    interpreter cannot follow (:class:`NotPlainJSON`; malformed text: ``JSONDecodeError``)."""
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_finite)
    except RecursionError:
        raise NotPlainJSON("the JSON is nested too deeply") from None


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` that refuses non-finite numbers (``allow_nan=False``)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except RecursionError:
        raise NotPlainJSON("the value is nested too deeply") from None


class _JSONNumbersLoader(yaml.SafeLoader):
    """``SafeLoader`` that also reads JSON's exponent numbers without a dot (``1e3``,
    ``2E-5``) as floats, as JSON and YAML 1.2 do; YAML 1.1 alone makes them strings, so a
    JSON file's ``"latency_s": 1e3`` was refused as text."""


_JSONNumbersLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:0|[1-9][0-9]*)[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(text: str, where: str = "the document") -> Any:
    """YAML (``safe_load`` rules, plus JSON's ``1e3`` numbers) whose result is checked to be
    plain JSON data.

    Raises ``yaml.YAMLError`` for malformed YAML and :class:`NotPlainJSON` for dates,
    ``!!binary``, ``!!set``, ``.nan`` / ``.inf`` or nesting that is too deep.
    """
    try:
        data = yaml.load(text, Loader=_JSONNumbersLoader)  # a SafeLoader subclass
    except RecursionError:
        raise NotPlainJSON(f"{where} is nested too deeply") from None
    check_plain(data, where)
    return data
