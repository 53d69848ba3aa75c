"""What every tool declaration shares: the kinds, names and keys, and how problems are reported.

A task declares tools in ``tools.md`` (``loader.toolsmd``) and ``tools/*.py``
(``loader.toolmodules``); author mistakes never raise, they come back as diagnostics
(FP202-FP219) with file and line, and the broken tool is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ...errors import Diagnostic, Severity

KINDS = ("python", "shell", "http", "mcp", "reference")
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
NAME_HINT = "use letters, digits, '_' or '-' (at most 64), starting with a letter or '_'"
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
COMMON_KEYS = ("type", "scope", "timeout", "retries", "env", "replay", "approval")
REPLAY_MODES = ("never", "safe")
"""``> replay: safe``: a resumed pass may answer the tool's calls from the journal (the tool
has no side effects anything depends on); ``never`` (the default): every call runs again."""
HTTP_EXTRA_KEYS = ("env", "max_bytes", "follow_redirects")
"""tools/http.py: the ${VAR} allow-list, the response size cap, redirect opt-in."""
KIND_KEYS: dict[str, tuple[str, ...]] = {
    "python": ("function",),
    "shell": ("params",),
    "http": ("method", "url", "headers", "params", "query", "body", *HTTP_EXTRA_KEYS),
    "mcp": ("server", "tool", "params"),
    "reference": (),
}
CODE_KINDS = ("python", "shell")

Diagnostics = list[Diagnostic]


def diagnostic(
    code: str,
    message: str,
    file: Path | str,
    line: int | None,
    owner: str,
    hint: str | None = None,
    *,
    warning: bool = False,
) -> Diagnostic:
    """A diagnostic of ``owner`` at ``file:line`` (an error unless ``warning``)."""
    return Diagnostic(
        code=code,
        message=message,
        file=str(file),
        line=line,
        task=owner,
        hint=hint,
        severity=Severity.WARNING if warning else Severity.ERROR,
    )


def content_hash(**parts: Any) -> str:
    """sha256 of a tool's defining parts (stable across processes)."""
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def metadata_value(key: str, value: str) -> Any:
    """Typed value of one metadata key; ValueError with a readable reason."""
    if key == "scope":
        if value.lower() not in ("shared", "local"):
            raise ValueError(f"must be 'shared' or 'local', not {value!r}")
        return value.lower()
    if key == "replay":
        if value.strip().lower() not in REPLAY_MODES:
            raise ValueError(f"must be 'safe' or 'never', not {value!r}")
        return value.strip().lower()
    if key == "approval":
        return _approval(value)
    if key == "timeout":
        number = _number(value, float, "number of seconds")
        if number <= 0:
            raise ValueError("must be a positive number of seconds")
        return number
    if key == "retries":
        count = _number(value, int, "whole number")
        if count < 0:
            raise ValueError("must be 0 or more")
        return count
    if key == "method":
        if value.upper() not in HTTP_METHODS:
            raise ValueError(f"must be one of {', '.join(HTTP_METHODS)}")
        return value.upper()
    if key == "headers":
        headers = _structured(value)
        if not isinstance(headers, dict):
            raise ValueError('must be a mapping such as {"Authorization": "Bearer ${TOKEN}"}')
        return {str(k): str(v) for k, v in headers.items()}
    if value[:1] in "[{":
        return _structured(value)
    return value


def _approval(value: str) -> Any:
    """``true`` / ``false`` or a block; checked by ``validate`` (``workflow.toolapproval``)."""
    word = value.strip().lower()
    if word in ("true", "yes", "on", "false", "no", "off"):
        return word in ("true", "yes", "on")
    return _structured(value) if value[:1] in "[{" else value


def _number(value: str, kind: Callable[[str], Any], what: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a {what}") from None


def _structured(value: str) -> Any:
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise ValueError(f"cannot parse {value!r}: {str(exc).splitlines()[0]}") from None
