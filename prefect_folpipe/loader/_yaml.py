"""YAML with line numbers: parse once, keep the line of every key and list item."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

Loc = tuple[str | int, ...]
MAX_NODES = 100_000
"""Most values a document may expand to through aliases (a "billion laughs" guard)."""


@dataclass
class SourceMap:
    """Where each part of a parsed YAML document is: ``(key, 0, key) -> line`` (1-based)."""

    file: str
    """Path relative to the workflow root, as diagnostics print it."""
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Loc = ()) -> int | None:
        """Line of ``loc``, or of its nearest parent that has one."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get(())


@dataclass(frozen=True)
class YamlProblem:
    """A YAML document that could not be read: syntax error or duplicate key."""

    message: str
    line: int | None
    kind: str = "syntax"
    """``syntax`` or ``duplicate``."""


def parse_yaml(
    text: str, file: str, *, line_offset: int = 0
) -> tuple[Any, SourceMap, list[YamlProblem]]:
    """Parse one YAML document. On a syntax error the data is ``None``."""
    source = SourceMap(file)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        return None, source, [_syntax_problem(exc, line_offset, text.count("\n") + 1)]
    except (ValueError, TypeError, RecursionError) as exc:  # e.g. unhashable keys, deep nesting
        return None, source, [YamlProblem(f"invalid YAML: {exc}", line_offset + 1 or None)]
    finally:
        loader.dispose()
    if node is None:
        return data, source, []
    bomb = _alias_problem(node, line_offset)
    if bomb is not None:
        return None, source, [bomb]
    problems: list[YamlProblem] = []
    source.lines[()] = node.start_mark.line + 1 + line_offset
    _record_lines(node, (), source.lines, problems, line_offset, set())
    return data, source, problems


def _alias_problem(root: yaml.Node, offset: int) -> YamlProblem | None:
    """Refuse recursive aliases and documents that aliases blow up past MAX_NODES."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _child_nodes(node))
            if sizes[key] > MAX_NODES:
                return YamlProblem("YAML aliases expand to too many values", offset + 1)
            continue
        if key in sizes:
            continue
        if key in active:
            return YamlProblem("recursive YAML alias", node.start_mark.line + 1 + offset)
        active.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _child_nodes(node) if id(c) not in sizes)
    return None


def _child_nodes(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _syntax_problem(exc: yaml.YAMLError, offset: int, last_line: int) -> YamlProblem:
    """The problem's line; when the parser only noticed at the end of the file, the line
    where the unclosed construct started is more useful."""
    mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    if mark is None or (context_mark is not None and mark.line + 1 >= last_line):
        mark = context_mark or mark
    line = mark.line + 1 + offset if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"{context}, {problem}" if context else str(problem)
    return YamlProblem(f"YAML syntax error: {message}", line)


def _record_lines(
    node: yaml.Node,
    loc: Loc,
    lines: dict[Loc, int],
    problems: list[YamlProblem],
    offset: int,
    seen: set[int],
) -> None:
    if id(node) in seen:  # an alias: its lines were recorded where the anchor is
        return
    seen.add(id(node))
    for child_loc, key_node, value_node in _children(node, loc):
        if child_loc in lines and isinstance(key_node, yaml.ScalarNode):
            problems.append(
                YamlProblem(
                    f"duplicate key {key_node.value!r} (the last one would silently win)",
                    key_node.start_mark.line + 1 + offset,
                    kind="duplicate",
                )
            )
        lines[child_loc] = key_node.start_mark.line + 1 + offset
        _record_lines(value_node, child_loc, lines, problems, offset, seen)


def _children(node: yaml.Node, loc: Loc) -> Iterator[tuple[Loc, yaml.Node, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                yield (*loc, key_node.value), key_node, value_node
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield (*loc, index), item, item
