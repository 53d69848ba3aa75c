"""Approval of a tool's calls (pure rules; the run-time check is ``tools.approval``).

A tool asks before each call when its metadata has ``approval``: ``true`` (the form
``{approved: bool}``, a prompt naming the tool and its arguments) or a block::

    > approval: {prompt: "Deploy {{ args.version }}?", input: {approved: bool, reason: str},
    >            timeout: 4h, on_timeout: {approved: false, reason: "no answer"}}

The prompt substitutes the call's arguments (``{{ args.version }}``) and the task's context
(``{{ context.release }}``), nothing else. ``on_timeout`` (tasks have it too) is the answer a
gate takes by itself when ``timeout`` passes; it must fit the form. ``notify`` names the
Prefect notification blocks told when a call starts waiting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .approval import (
    PLACEHOLDER,
    TEMPLATE_CODE,
    FieldType,
    coerce,
    input_fields,
    lookup,
    notify_names,
    parse_duration,
)

KEYS = ("prompt", "input", "timeout", "on_timeout", "notify")
PATH = re.compile(
    r"""^(?:args|context)(?:\.(?!__)[A-Za-z_][A-Za-z0-9_]*|\[\s*-?\d+\s*\]"""
    r"""|\[\s*(?:'[^'\\]*'|"[^"\\]*")\s*\])*$"""
)
DEFAULT_FIELDS: dict[str, FieldType] = {"approved": "bool"}
TRUE_WORDS = ("true", "yes", "on")
FALSE_WORDS = ("false", "no", "off")


@dataclass(frozen=True)
class ToolApproval:
    """A tool's ``approval`` metadata, checked."""

    prompt: str | None = None
    """``None``: "Run tool NAME with ARGS?"."""
    fields: Mapping[str, FieldType] = field(default_factory=lambda: dict(DEFAULT_FIELDS))
    timeout: float | None = None
    on_timeout: Mapping[str, Any] | None = None
    """The answer taken when ``timeout`` passes (coerced to the form)."""
    notify: tuple[str, ...] = ()
    """``notify``: the Prefect notification blocks told when a call starts waiting."""


def parse_tool_approval(value: Any) -> ToolApproval | None:
    """The checked ``approval`` of a tool (``None``: the tool never asks). ``ValueError``
    names the first problem; its ``key`` attribute says which part was wrong."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            value = True
        elif word in FALSE_WORDS:
            value = False
    if value is None or value is False:
        return None
    if value is True:
        return ToolApproval()
    if not isinstance(value, Mapping):
        raise _problem("", f"must be true or a block such as {{prompt: ..., input: ...}}, not "
                           f"{value!r}")  # fmt: skip
    unknown = [key for key in value if key not in KEYS]
    if unknown:
        raise _problem("", f"unknown key(s) {', '.join(map(repr, unknown))} (known: "
                           f"{', '.join(KEYS)})")  # fmt: skip
    prompt = value.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise _problem("prompt", "must be a non-empty text")
        problems = prompt_problems(prompt)
        if problems:
            raise _problem("prompt", problems[0])
    try:
        fields = input_fields(value["input"]) if "input" in value else dict(DEFAULT_FIELDS)
    except (ValueError, AttributeError) as exc:
        raise _problem("input", str(exc)) from None
    try:
        timeout = parse_duration(value.get("timeout"))
    except ValueError as exc:
        raise _problem("timeout", str(exc)) from None
    try:
        notify = notify_names(value.get("notify"))
    except ValueError as exc:
        raise _problem("notify", str(exc)) from None
    return ToolApproval(
        prompt, fields, timeout, default_answer(fields, value.get("on_timeout"), timeout), notify
    )


def default_answer(
    fields: Mapping[str, FieldType], raw: Any, timeout: float | None
) -> dict[str, Any] | None:
    """``on_timeout`` checked against the form: every key of the form of its type (text keys
    may be left out), other keys (a ``reason``) kept as given. ``ValueError`` with ``key =
    "on_timeout"``."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _problem("on_timeout", "must be an answer such as {approved: false, reason: ...}")
    if timeout is None:
        raise _problem("on_timeout", "needs a timeout: the answer is taken when it passes")
    blanks = {key: "" for key, kind in fields.items() if kind == "str"}
    given = {**blanks, **{key: value for key, value in raw.items() if key in fields}}
    extra = {str(key): value for key, value in raw.items() if key not in fields}
    try:
        return {**coerce(fields, given), **extra}
    except ValueError as exc:
        raise _problem("on_timeout", f"does not fit the form: {exc}") from None


def _problem(key: str, message: str) -> ValueError:
    exc = ValueError(message)
    exc.key = key  # type: ignore[attr-defined]
    return exc


def prompt_problems(prompt: str) -> list[str]:
    """What is wrong with a tool's prompt (``{{ args.x }}`` and ``{{ context.x }}`` only)."""
    problems = []
    if TEMPLATE_CODE.search(prompt):
        problems.append("template tags ({% %}, {# #}) are not supported: only {{ args.key }}")
    for match in PLACEHOLDER.finditer(prompt):
        expression = match.group(1).strip()
        if not PATH.match(expression):
            problems.append(
                f"{{{{ {expression} }}}} is not a path such as {{{{ args.version }}}} or "
                "{{ context.release }}"
            )
    rest = PLACEHOLDER.sub("", prompt)
    if "{{" in rest or "}}" in rest:
        problems.append("an unclosed {{ or a stray }}")
    return problems


def render_tool_prompt(
    approval: ToolApproval,
    tool: str,
    arguments: Mapping[str, Any],
    context: Mapping[str, Any],
) -> str:
    """The question of one call: the prompt with ``args.*`` / ``context.*`` substituted, or
    the default naming the tool and its arguments."""
    if approval.prompt is None:
        shown = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, default=str)
        return f"Run tool {tool!r} with {shown}?"
    roots = {"args": arguments, "context": context}

    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if not PATH.match(expression):
            return match.group(0)
        root = "args" if expression.startswith("args") else "context"
        found = lookup(roots[root], expression[len(root) :])
        if found is None:
            return ""
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

    return PLACEHOLDER.sub(value, approval.prompt)


def declined_text(tool: str, answer: Mapping[str, Any]) -> str:
    """The tool result the model reads for a declined call."""
    reason = next(
        (answer[key] for key in ("reason", "comment") if isinstance(answer.get(key), str)), ""
    )
    text = f"The call to tool {tool!r} was declined by the approver; the tool did not run."
    return f"{text} Reason: {reason.strip()}" if reason.strip() else text


def approves(answer: Mapping[str, Any]) -> bool:
    """Whether an answer lets the call run: ``approved`` false (when the form has it) or a
    ``decision`` of reject / no declines it."""
    if answer.get("approved") is False:
        return False
    decision = answer.get("decision")
    return not (isinstance(decision, str) and decision.lower() in ("reject", "rejected", "no"))
