"""Approval gates of ``task.yaml`` (pure rules; the run-time gate is ``compile.approval``).

```yaml
approval:
  prompt: "Ship release {{ context.version }}?"   # shown in the Prefect UI / the terminal
  input: {approved: bool, comment: str}            # the answer's keys and types (all required)
  timeout: 72h                                     # then the task's on_failure applies
  notify: [ops-slack]                              # Prefect notification blocks told
```

The prompt is rendered by substitution only: ``{{ context.a.b }}``, ``{{ context.items[0] }}``
and ``{{ context['key'] }}`` read the context (missing values render empty); nothing else is
evaluated, so a prompt can never run code. An input type is one of ``str int float bool list
dict`` or a list of choices (``decision: [approve, reject, changes]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .._process.wording import noun
from .config import OUTPUT_TYPES
from .context import ENV_KEY, ERRORS_KEY

PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
TEMPLATE_CODE = re.compile(r"\{%|%\}|\{#|#\}")
PATH = re.compile(
    r"""^context(?:\.(?!__)[A-Za-z_][A-Za-z0-9_]*|\[\s*-?\d+\s*\]|\[\s*(?:'[^'\\]*'|"[^"\\]*")\s*\])*$"""
)
STEP = re.compile(
    r"""\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*(-?\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]"""
)
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)", re.IGNORECASE)
UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
TRUE = frozenset({"true", "yes", "y", "1", "on", "approve", "approved"})
FALSE = frozenset({"false", "no", "n", "0", "off", "reject", "rejected"})
MAX_CHOICES = 50
BLOCK_NAME = re.compile(r"^(?:[a-z0-9][a-z0-9-]*/)?[a-z0-9][a-z0-9-]*$")
"""A Prefect block document: ``name`` or ``block-type-slug/name`` (lowercase, digits, -)."""
MAX_NOTIFY = 20

FieldType = str | tuple[str, ...]
"""One of ``OUTPUT_TYPES``, or the allowed choices."""


def parse_duration(value: Any) -> float | None:
    """Seconds of ``72h``, ``30m``, ``1h30m``, ``2d``, ``45s`` or a number; ``None`` for none."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("must be a positive number of seconds")
        return float(value)
    text = str(value).strip().replace(" ", "")
    if not text or DURATION.sub("", text):
        raise ValueError(f"{value!r} is not a duration such as 72h, 30m, 1h30m, 2d or 45s")
    seconds = sum(float(n) * UNITS[unit.lower()] for n, unit in DURATION.findall(text))
    if seconds <= 0:
        raise ValueError("must be longer than 0 seconds")
    return seconds


def notify_names(value: Any) -> tuple[str, ...]:
    """The notification blocks of ``approval.notify`` (a block name, ``slug/name``, or a
    list of them); ``ValueError`` naming the first bad one."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or len(names) > MAX_NOTIFY:
        raise ValueError(
            f"must be the name of a Prefect notification block or a list of 1 to {MAX_NOTIFY} "
            f"of them, not {value!r}"
        )
    for name in names:
        if not isinstance(name, str) or not BLOCK_NAME.match(name.strip()):
            raise ValueError(
                f"{name!r} is not a block document name such as my-webhook or "
                "slack-webhook/ops (lowercase letters, digits and -)"
            )
    return tuple(dict.fromkeys(name.strip() for name in names))


def input_fields(spec: Mapping[str, Any]) -> dict[str, FieldType]:
    """The answer's keys and types; ``ValueError`` naming the first bad one."""
    if not spec:
        raise ValueError("declares no keys; e.g. {approved: bool}")
    fields: dict[str, FieldType] = {}
    for key, kind in spec.items():
        if not isinstance(key, str) or not KEY.match(key) or key in (ENV_KEY, ERRORS_KEY):
            raise ValueError(
                f"key {key!r} must be a plain name (letters, digits, _), not _env or _errors"
            )
        fields[key] = _field_type(key, kind)
    return fields


def _field_type(key: str, kind: Any) -> FieldType:
    if isinstance(kind, str) and kind in OUTPUT_TYPES:
        return kind
    choices = isinstance(kind, list) and 0 < len(kind) <= MAX_CHOICES
    if choices and all(isinstance(choice, str) and choice for choice in kind):
        return tuple(dict.fromkeys(kind))
    raise ValueError(
        f"key {key!r}: type {kind!r} is not one of {', '.join(OUTPUT_TYPES)} or a list of "
        "choices such as [approve, reject]"
    )


def template_problems(prompt: str) -> list[str]:
    """What is wrong with a prompt template (empty when it renders safely)."""
    problems = []
    if TEMPLATE_CODE.search(prompt):
        problems.append("template tags ({% %}, {# #}) are not supported: only {{ context.key }}")
    for match in PLACEHOLDER.finditer(prompt):
        expression = match.group(1).strip()
        if not PATH.match(expression):
            problems.append(
                f"{{{{ {expression} }}}} is not a context path such as {{{{ context.version }}}}"
            )
    rest = PLACEHOLDER.sub("", prompt)
    if "{{" in rest or "}}" in rest:
        problems.append("an unclosed {{ or a stray }}")
    return problems


def render_prompt(prompt: str, context: Mapping[str, Any]) -> str:
    """The prompt with each ``{{ context.path }}`` replaced by its value (no evaluation)."""

    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if not PATH.match(expression):
            return match.group(0)
        found = lookup(context, expression[len("context") :])
        if found is None:
            return ""
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

    return PLACEHOLDER.sub(value, prompt)


def lookup(context: Mapping[str, Any], path: str) -> Any:
    """The value at ``.a[0]['b']`` below ``context`` (``None`` when any step is missing)."""
    current: Any = context
    for name, index, single, double in STEP.findall(path):
        if index:
            position = int(index)
            ok = isinstance(current, list) and -len(current) <= position < len(current)
            current = current[position] if ok else None
        else:
            key = name or single or double
            current = current.get(key) if isinstance(current, Mapping) else None
        if current is None:
            return None
    return current


def mentions(expression: Any, keys: Mapping[str, Any]) -> bool:
    """Whether a ``skip_if`` condition (text or structured) names one of ``keys``."""
    text = expression if isinstance(expression, str) else json.dumps(expression)
    return any(re.search(rf"\b{re.escape(key)}\b", text) for key in keys)


def coerce(fields: Mapping[str, FieldType], raw: Mapping[str, Any]) -> dict[str, Any]:
    """The answer with every key present and of its type; text (``--approve k=v``, a terminal)
    is parsed. ``ValueError`` names the first problem."""
    missing = [key for key in fields if key not in raw]
    if missing:
        raise ValueError(f"no value for {', '.join(repr(k) for k in missing)}")
    unknown = [key for key in raw if key not in fields]
    if unknown:
        keys = ", ".join(repr(k) for k in unknown)
        raise ValueError(f"unknown {noun(len(unknown), 'key')} {keys}")
    return {key: coerce_value(key, fields[key], raw[key]) for key in fields}


def coerce_value(key: str, kind: FieldType, value: Any) -> Any:
    """One value as ``kind`` (strings are parsed: ``yes``/``no``, numbers, JSON)."""
    if isinstance(kind, tuple):
        if value in kind:
            return value
        raise ValueError(f"{key!r} must be one of {', '.join(kind)}, not {value!r}")
    if isinstance(value, str) and kind != "str":
        value = _parse_text(key, kind, value)
    expected = {"str": str, "int": int, "float": int | float, "bool": bool, "list": list}
    if kind == "dict":
        ok = isinstance(value, dict)
    else:
        ok = isinstance(value, expected[kind]) and not (kind != "bool" and isinstance(value, bool))
    if not ok:
        raise ValueError(f"{key!r} must be {kind}, not {type(value).__name__}")
    return float(value) if kind == "float" else value


def _parse_text(key: str, kind: str, text: str) -> Any:
    stripped = text.strip()
    if kind == "bool":
        if stripped.lower() in TRUE:
            return True
        if stripped.lower() in FALSE:
            return False
        raise ValueError(f"{key!r} must be yes or no (true/false), not {text!r}")
    try:
        return json.loads(stripped)
    except ValueError:
        raise ValueError(f"{key!r} must be {kind}, not {text!r}") from None
