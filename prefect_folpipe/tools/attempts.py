"""One tool call's checks and attempts: arguments against the schema, then the runner under the
tool's timeout, retried as its ``retries`` allow. Failures become outcomes, never exceptions."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..authoring import ToolContext
from ..errors import SandboxViolation, is_retryable
from ..workflow.tree import EffectiveSettings, ToolSpec
from .python import ToolArgumentError
from .shell import ShellToolFailed

Runner = Callable[[ToolSpec, Mapping[str, Any], ToolContext], Awaitable[Any]]


DECLINED = "declined"
"""``Outcome.code`` of a call its approver declined (the tool did not run)."""


@dataclass
class Outcome:
    """What one tool call came to: its content, or an error with a code."""

    content: str
    is_error: bool = False
    attempts: int = 0
    code: str | None = None

    def text(self) -> str:
        """What the model reads: the result, or ``Error (FPxxx[, after N attempts]): ...``."""
        if not self.is_error or self.code == DECLINED:
            return self.content
        tries = f", after {self.attempts} attempts" if self.attempts > 1 else ""
        return f"Error ({self.code}{tries}): {self.content}"


def result_text(value: Any) -> str:
    """A tool's return value as text for the model: str as is, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def error(code: str, message: str, attempts: int = 0) -> Outcome:
    return Outcome(message, True, attempts, code)


class ArgumentChecker:
    """Validates a call's arguments against its tool's JSON Schema (validators cached per tool;
    rebuilt when the spec is replaced, e.g. MCP schemas filled in)."""

    def __init__(self) -> None:
        self._validators: dict[str, tuple[ToolSpec, Draft202012Validator | str]] = {}

    def problem(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
        """What is wrong with ``arguments`` (``None`` when they are valid)."""
        cached = self._validators.get(spec.name)
        if cached is not None and cached[0] is spec:
            validator = cached[1]
        else:
            validator = checked_validator(spec.parameters)
            self._validators[spec.name] = (spec, validator)
        if isinstance(validator, str):
            return validator
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if not errors:
            return None
        parts = []
        for found in errors[:5]:
            where = "/".join(str(p) for p in found.path)
            parts.append(f"{where}: {found.message}" if where else found.message)
        return "; ".join(parts)


def checked_validator(parameters: Mapping[str, Any]) -> Draft202012Validator | str:
    """The validator of a parameter schema, or what is wrong with the schema.

    Checking a schema against the metaschema costs ~1 ms, more than most calls it guards;
    tools repeat a few schemas, so each distinct schema (by its JSON text) is checked once per
    process."""
    schema = dict(parameters)
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON: checked (and refused) each time
        key = None
    found = _CHECKED.get(key) if key is not None else None
    if found is None:
        try:
            Draft202012Validator.check_schema(schema)
            found = Draft202012Validator(schema)
        except SchemaError as exc:
            found = f"the tool's parameter schema is invalid: {exc.message}"
        if key is not None:
            if len(_CHECKED) >= MAX_CHECKED:
                _CHECKED.clear()
            _CHECKED[key] = found
    return found


MAX_CHECKED = 1024
_CHECKED: dict[str, Draft202012Validator | str] = {}
"""A parameter schema's JSON text -> its validator, or the problem with the schema."""


def limits(spec: ToolSpec, settings: EffectiveSettings) -> tuple[int, float | None]:
    """A tool's retries and timeout: its own metadata, else the task's settings."""
    retries = spec.metadata.get("retries", settings.tool_retries)
    timeout = spec.metadata.get("timeout", settings.tool_timeout)
    return int(retries), float(timeout) if timeout else None


async def run_attempts(
    spec: ToolSpec,
    runner: Runner,
    arguments: dict[str, Any],
    ctx: ToolContext,
    settings: EffectiveSettings,
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> Outcome:
    """Run the tool, retrying what is worth another try, up to its ``retries``."""
    retries, timeout = limits(spec, settings)
    outcome = Outcome("")
    for attempt in range(1, retries + 2):
        outcome, retry = await _attempt(spec, runner, arguments, ctx, timeout, attempt)
        if not retry:
            return outcome
        if attempt <= retries:
            logger.warning("tool %s failed (attempt %d), retrying", spec.name, attempt)
    return outcome


async def _attempt(
    spec: ToolSpec,
    runner: Runner,
    arguments: dict[str, Any],
    ctx: ToolContext,
    timeout: float | None,
    attempt: int,
) -> tuple[Outcome, bool]:
    """One try: the outcome and whether another try is worth it."""
    name = f"tool {spec.name!r}"
    try:
        async with asyncio.timeout(timeout):
            value = await runner(spec, arguments, ctx)
        return Outcome(result_text(value), False, attempt), False
    except TimeoutError:
        return error("FP233", f"{name} timed out after {timeout:g}s", attempt), True
    except ShellToolFailed as exc:
        text = f"{name} {exc}" + (f"; output:\n{exc.output}" if exc.output else "")
        return error("FP234", text, attempt), exc.retryable
    except ToolArgumentError as exc:
        return error("FP231", f"invalid arguments for {spec.name!r}: {exc}", attempt), False
    except SandboxViolation as exc:
        return error("FP201", f"{name}: sandbox violation: {exc}", attempt), False
    except Exception as exc:
        message = f"{name} failed: {type(exc).__name__}: {exc}"
        return error("FP232", message, attempt), is_retryable(exc)
