"""The text layer of tools.md: sections, blockquote metadata, parameter lists, code.

```markdown
## get_weather              <- H2 = tool name
> type: http                <- blockquote metadata, one ``key: value`` a line
> url: https://...

Get the forecast.           <- description (text before the code block)

**Parameters:**             <- optional parameter list (http, shell, mcp; python: descriptions)
- location (str): City name
- days (int, default=3): Forecast days

```python                   <- first code block = implementation
...
```
```

Nothing here runs code; ``discovery`` turns these pieces into ``ToolSpec``s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ...authoring import object_schema

_H2 = re.compile(r"^##(?!#)\s*(?P<name>.*?)\s*#*\s*$")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_META = re.compile(r"^>\s?(?P<body>.*)$")
_META_PAIR = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:\s*(?P<value>.*)$")
_PARAMS_HEADER = re.compile(
    r"^(?:\*\*|__)?(?:#{3,6}\s*)?(?:Parameters|Params|Arguments|Args)\s*:?\s*(?:\*\*|__)?\s*:?\s*$",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*[-*+]\s+(?P<item>.+)$")
_PARAM_ITEM = re.compile(
    r"^`?(?P<name>[A-Za-z_][\w-]*)`?\s*(?:\((?P<spec>[^)]*)\))?\s*(?:[:—–-]\s*(?P<desc>.*))?$"
)

TYPE_ALIASES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "string": {"type": "string"},
    "int": {"type": "integer"},
    "integer": {"type": "integer"},
    "float": {"type": "number"},
    "number": {"type": "number"},
    "bool": {"type": "boolean"},
    "boolean": {"type": "boolean"},
    "list": {"type": "array"},
    "array": {"type": "array"},
    "dict": {"type": "object"},
    "object": {"type": "object"},
    "any": {},
}


@dataclass
class Section:
    """One ``## name`` section of tools.md with its numbered body lines."""

    name: str
    line: int
    body: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class CodeBlock:
    code: str
    info: str
    line: int
    """Line of the first line of code (the one after the opening fence)."""
    closed: bool = True


@dataclass
class ParamEntry:
    name: str
    schema: dict[str, Any]
    required: bool
    line: int


@dataclass
class ParsedSection:
    """The pieces of a section, before type-specific interpretation."""

    metadata: dict[str, tuple[str, int]] = field(default_factory=dict)
    bad_metadata: list[tuple[str, int]] = field(default_factory=list)
    description: str = ""
    params: list[ParamEntry] | None = None
    param_errors: list[tuple[str, int]] = field(default_factory=list)
    code: CodeBlock | None = None
    extra_code_blocks: list[int] = field(default_factory=list)


def _fence(line: str) -> re.Match[str] | None:
    """The fence ``line`` is, if any (most lines are ruled out without the regex)."""
    if "```" not in line[:6] and "~~~" not in line[:6]:
        return None
    return _FENCE.match(line)


def split_sections(text: str) -> list[Section]:
    """H2 sections of a markdown file (headings inside code fences do not count)."""
    sections: list[Section] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        fence = _track_fence(line, fence)
        heading = (
            _H2.match(line)
            if fence is None and line.startswith("##") and not line.startswith("###")
            else None
        )
        if heading:
            sections.append(Section(heading.group("name").strip("` "), number))
        elif sections:
            sections[-1].body.append((number, line))
    return sections


def _track_fence(line: str, fence: str | None) -> str | None:
    """The open fence after ``line`` (None when outside a code block)."""
    match = _fence(line)
    if not match:
        return fence
    marker = match.group("fence")
    if fence is None:
        return marker
    if marker[0] == fence[0] and len(marker) >= len(fence) and not match.group("info").strip():
        return None
    return fence


def parse_section(section: Section) -> ParsedSection:
    """Metadata, description, parameter list and code block of one section."""
    parsed = ParsedSection()
    lines = section.body
    index = _read_metadata(lines, parsed)
    description: list[str] = []
    while index < len(lines):
        line = lines[index][1]
        if _fence(line):
            block, index = _read_code(lines, index)
            if parsed.code is None:
                parsed.code = block
            else:
                parsed.extra_code_blocks.append(block.line - 1)
            continue
        if parsed.code is None and _PARAMS_HEADER.match(line.strip()) and parsed.params is None:
            index = _read_params(lines, index + 1, parsed)
            continue
        if parsed.code is None:
            description.append(line)
        index += 1
    parsed.description = "\n".join(description).strip()
    return parsed


def _read_metadata(lines: list[tuple[int, str]], parsed: ParsedSection) -> int:
    """Read the blockquote at the top of a section; return the index after it."""
    index = 0
    while index < len(lines):
        number, line = lines[index]
        if not line.strip():
            index += 1
            continue
        match = _META.match(line.strip())
        if not match:
            break
        body = match.group("body").strip()
        if body:
            pair = _META_PAIR.match(body)
            if pair:
                key = pair.group("key").lower().replace("-", "_")
                parsed.metadata[key] = (pair.group("value").strip(), number)
            else:
                parsed.bad_metadata.append((body, number))
        index += 1
    return index


def _read_code(lines: list[tuple[int, str]], index: int) -> tuple[CodeBlock, int]:
    """Read the fenced block opening at ``index``; return it and the index after it."""
    number, opening = lines[index]
    match = _FENCE.match(opening)
    assert match is not None
    fence, indent = match.group("fence"), len(match.group("indent"))
    code: list[str] = []
    index += 1
    while index < len(lines):
        line = lines[index][1]
        close = _fence(line)
        if (
            close
            and close.group("fence")[0] == fence[0]
            and len(close.group("fence")) >= len(fence)
            and not close.group("info").strip()
        ):
            return CodeBlock(_dedent(code, indent), match.group("info").strip(), number + 1), (
                index + 1
            )
        code.append(line)
        index += 1
    return CodeBlock(_dedent(code, indent), match.group("info").strip(), number + 1, False), index


def _dedent(lines: list[str], indent: int) -> str:
    if indent:
        lines = [line[indent:] if line[:indent].isspace() else line for line in lines]
    return "\n".join(lines) + ("\n" if lines else "")


def _read_params(lines: list[tuple[int, str]], index: int, parsed: ParsedSection) -> int:
    """Read a ``**Parameters:**`` list; return the index of the first line after it."""
    entries: list[ParamEntry] = []
    while index < len(lines):
        number, line = lines[index]
        item = _LIST_ITEM.match(line)
        if item and not line.startswith(("  ", "\t")):
            entry = parse_param_item(item.group("item"), number, parsed.param_errors)
            if entry:
                entries.append(entry)
        elif line.strip() and line.startswith(("  ", "\t")) and entries:
            _append_description(entries[-1], line.strip())
        elif line.strip():
            break
        index += 1
    parsed.params = entries
    return index


def _append_description(entry: ParamEntry, text: str) -> None:
    current = entry.schema.get("description", "")
    entry.schema["description"] = f"{current} {text}".strip()


def parse_param_item(text: str, line: int, errors: list[tuple[str, int]]) -> ParamEntry | None:
    """``name (type, default=3): description`` -> a ParamEntry (errors appended on failure)."""
    match = _PARAM_ITEM.match(text.strip())
    if not match:
        errors.append((f"cannot read parameter {text.strip()!r}", line))
        return None
    schema: dict[str, Any] = {"type": "string"}
    required = True
    for part in _split_top_level(match.group("spec") or ""):
        word = part.strip()
        key, _, value = word.partition("=")
        if not word:
            continue
        if value or key.strip().lower() == "default":
            schema["default"] = _scalar(value.strip())
            required = False
        elif word.lower() == "optional":
            required = False
        elif word.lower() == "required":
            required = True
        elif (typed := param_type_schema(word)) is not None:
            schema = {**typed, **{k: v for k, v in schema.items() if k != "type"}}
        else:
            errors.append((f"unknown type {word!r} for parameter {match.group('name')!r}", line))
    if match.group("desc"):
        schema["description"] = match.group("desc").strip()
    return ParamEntry(match.group("name"), schema, required, line)


def param_type_schema(word: str) -> dict[str, Any] | None:
    """JSON schema of a type word (``str``, ``int``, ``list[str]``, ...); None if unknown."""
    word = word.strip().lower()
    if word in TYPE_ALIASES:
        return dict(TYPE_ALIASES[word])
    inner = re.fullmatch(r"(list|array)\[(?P<item>[\w\s]+)\]", word)
    if inner and inner.group("item").strip() in TYPE_ALIASES:
        return {"type": "array", "items": dict(TYPE_ALIASES[inner.group("item").strip()])}
    return None


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def split_param_list(text: str) -> list[str]:
    """Items of an inline ``> params: a (str), b (int, default=1)`` value."""
    return [part.strip() for part in _split_top_level(text) if part.strip()]


def _scalar(text: str) -> Any:
    """A default value: YAML scalar rules (``3`` -> 3, ``true`` -> True, ``"x"`` -> "x")."""
    try:
        return yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return text


def params_schema(entries: list[ParamEntry]) -> dict[str, Any]:
    """JSON schema (type object) of a parameter list."""
    properties = {entry.name: entry.schema for entry in entries}
    return object_schema(properties, [entry.name for entry in entries if entry.required])
