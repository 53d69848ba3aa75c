"""Structured output: find the JSON in a final answer, check declared keys, coerce their types.

Where the JSON is taken from, in order:

1. the **last** fenced block labelled ``json`` (```` ```json ```` at the start of a line);
2. else the last fenced block without a language label (```` ``` ````);
3. else the whole answer, when it is a JSON object by itself.

The last block wins because models tend to draft first and answer last. Declared keys must be
present; typed keys (``str|int|float|bool|list|dict``) are coerced where the intent is clear
(``"3"`` -> ``3``, ``"true"`` -> ``True``, ``2.0`` -> ``2``) and rejected otherwise; untyped keys
pass through unchanged. Extra keys are ignored.

The JSON must be strict (:mod:`workflow.jsondata`): ``NaN``, ``Infinity``, numbers that
overflow to infinity and nesting deeper than ``MAX_DEPTH`` make the answer unusable, like any
other malformed answer (a repair re-prompt, then FP312), never a ``RecursionError``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..workflow.jsondata import NotPlainJSON, check_plain
from ..workflow.jsondata import loads as strict_loads

FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL | re.MULTILINE)
JSON_TYPES: dict[str, str] = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
}
TRUE_WORDS = frozenset({"true", "yes", "y", "1", "on"})
FALSE_WORDS = frozenset({"false", "no", "n", "0", "off"})


class CoercionError(ValueError):
    """A value cannot be read as the declared type."""


@dataclass(frozen=True)
class OutputCheck:
    """Outcome of checking one answer: the coerced outputs or the problems found."""

    outputs: dict[str, Any] = field(default_factory=dict)
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def extract_json(text: str) -> Any:
    """The JSON value of an answer (see module docstring); raise ``ValueError`` if none."""
    blocks = [(label.lower(), body) for label, body in FENCE.findall(text)]
    labelled = [body for label, body in blocks if label == "json"]
    bare = [body for label, body in blocks if not label]
    if labelled or bare:
        body = (labelled or bare)[-1]
        try:
            return strict_loads(body)
        except (json.JSONDecodeError, NotPlainJSON) as exc:
            raise ValueError(f"the JSON code block is not valid JSON: {exc}") from None
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return strict_loads(stripped)
        except (json.JSONDecodeError, NotPlainJSON) as exc:
            raise ValueError(f"the answer is not valid JSON: {exc}") from None
    raise ValueError("the answer has no ```json code block")


def check_output(text: str, output_types: Mapping[str, str | None]) -> OutputCheck:
    """Extract, check and coerce the declared outputs of an answer."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        return OutputCheck(errors=(str(exc),))
    if not isinstance(data, dict):
        return OutputCheck(errors=(f"the JSON must be an object, got {_json_kind(data)}",))
    try:
        check_plain(data, "the JSON")
    except NotPlainJSON as exc:
        return OutputCheck(errors=(str(exc),))
    outputs: dict[str, Any] = {}
    errors: list[str] = []
    for key, type_name in output_types.items():
        if key not in data:
            errors.append(f"missing key {key!r}")
            continue
        try:
            outputs[key] = coerce(data[key], type_name)
        except CoercionError as exc:
            errors.append(f"key {key!r}: {exc}")
    return OutputCheck(outputs=outputs, errors=tuple(errors))


def coerce(value: Any, type_name: str | None) -> Any:
    """``value`` as the declared type; untyped (``None``) values pass through."""
    if type_name is None:
        return value
    converter = _COERCERS.get(type_name)
    if converter is None:
        raise CoercionError(f"unknown type {type_name!r}")
    return converter(value)


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise _mismatch("int", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if math.isfinite(number) and number.is_integer():
                return int(number)
    raise _mismatch("int", value)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise _mismatch("float", value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _mismatch("float", value) from None
        if math.isfinite(number):
            return number
    raise _mismatch("float", value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise _mismatch("bool", value)


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise _mismatch("str", value)


def _parsed(value: Any, kind: type, name: str) -> Any:
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        try:
            parsed = strict_loads(value)
            check_plain(parsed)
        except (json.JSONDecodeError, NotPlainJSON):
            parsed = None
        if isinstance(parsed, kind):
            return parsed
    raise _mismatch(name, value)


def _mismatch(type_name: str, value: Any) -> CoercionError:
    shown = json.dumps(value, default=str)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return CoercionError(f"expected {type_name}, got {_json_kind(value)} {shown}")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    for name, kind in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(value, kind):
            return name
    return "list" if isinstance(value, list) else "dict" if isinstance(value, dict) else "value"


_COERCERS: dict[str, Callable[[Any], Any]] = {
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "str": _to_str,
    "list": lambda value: _parsed(value, list, "list"),
    "dict": lambda value: _parsed(value, dict, "dict"),
}


def output_schema(output_types: Mapping[str, str | None]) -> dict[str, Any] | None:
    """JSON Schema of the declared outputs (for providers' JSON mode); ``None`` if none."""
    if not output_types:
        return None
    properties = {
        key: ({"type": JSON_TYPES[t]} if t in JSON_TYPES else {}) for key, t in output_types.items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(output_types),
    }


def repair_prompt(
    errors: tuple[str, ...] | list[str], output_types: Mapping[str, str | None]
) -> str:
    """The user message asking the model to fix its answer, naming every problem."""
    problems = "\n".join(f"- {error}" for error in errors)
    keys = "\n".join(f"- {key} ({t or 'any'})" for key, t in output_types.items())
    return (
        "Your previous answer could not be used:\n"
        f"{problems}\n\n"
        "Answer again with a single ```json code block holding an object with these keys "
        f"and types:\n{keys}"
    )
