"""Descriptions of declared inputs from task.yaml comments (``- topic  # what it is about``).

A workflow's inputs become the parameters of its deployments; the Prefect form shows a
description under each field. An input's ``description:`` says it; otherwise the comment at
the end of the line declaring it does.
"""

from __future__ import annotations

from typing import Any

from ..errors import Diagnostic
from ..workflow.config import InputField, InputSpec, TaskConfig
from ._yaml import SourceMap


def input_problems(config: TaskConfig, source: SourceMap, label: str) -> list[Diagnostic]:
    """FP106: an input name declared twice (in one list, or both required and optional)."""
    spec = config.input
    if spec is None:
        return []
    problems = []
    seen: dict[str, str] = {}
    for group in ("required", "optional"):
        keys = getattr(spec, group)
        for index, name in enumerate(keys):
            if name not in seen:
                seen[name] = group
                continue
            where = f"twice in input.{group}" if seen[name] == group else "required and optional"
            loc = ("input", group, name if isinstance(keys, dict) else index)
            problems.append(
                Diagnostic(
                    "FP106",
                    f"input {name!r} is declared {where}",
                    source.file,
                    source.line(loc),
                    label,
                    "declare each input once (an optional input is not also required)",
                )
            )
    return problems


def with_input_comments(
    config: TaskConfig, text: str, source: SourceMap, offset: int
) -> TaskConfig:
    """``config`` with each undescribed input's line comment as its description."""
    spec = config.input
    if spec is None or "#" not in text:
        return config
    lines = text.splitlines()
    found = False
    described: dict[str, Any] = {}
    for group in ("required", "optional"):
        keys = getattr(spec, group)
        declared: dict[str, Any] = (
            dict(keys) if isinstance(keys, dict) else dict.fromkeys(keys)  # type: ignore[arg-type]
        )
        locs = [("input", group, k if isinstance(keys, dict) else i) for i, k in enumerate(keys)]
        at = [source.lines.get(loc) for loc in locs]
        first = dict(reversed(list(zip(keys, at, strict=True))))  # a repeated name: FP106
        for key in declared:
            line = first[key]
            shared = at.count(line) > 1  # `[a, b]  # ...` describes no single key
            comment = None if shared else _line_comment(lines, line, offset)
            field = spec.field(key)
            if comment and not field.description:
                declared[key] = field.model_copy(update={"description": comment})
                found = True
            elif not isinstance(declared[key], InputField) and declared[key] is not None:
                declared[key] = field
        described[group] = declared
    if not found:
        return config
    return config.model_copy(update={"input": InputSpec.model_validate(described)})


def _line_comment(lines: list[str], line: int | None, offset: int) -> str | None:
    """The ``# comment`` ending a 1-based line of the document (quotes respected)."""
    if line is None or not 0 < line - offset <= len(lines):
        return None
    text = lines[line - offset - 1]
    quote = ""
    for position, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or text[position - 1].isspace()):
            return text[position + 1 :].strip() or None
    return None
