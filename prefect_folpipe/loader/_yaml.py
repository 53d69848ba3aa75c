"""YAML with line numbers: parse once, keep the line of every key and list item."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

_Base: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAGS: dict[str, str] = {}
"""Plain scalar -> resolved tag: the implicit resolvers' regexes run once per distinct text."""


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """The C-accelerated safe loader with a memo in front of implicit tag resolution."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0] and len(value) <= 64:
            tag = _TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_TAGS) < 20_000:
                    _TAGS[value] = tag
            return tag
        return super().resolve(kind, value, implicit)


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
        if node is None:
            return None, source, []
        builder = _Builder(loader, source.lines, line_offset)
        source.lines[()] = node.start_mark.line + 1 + line_offset
        data = builder.value(node, ())
    except yaml.YAMLError as exc:
        return None, source, [_syntax_problem(exc, line_offset, text.count("\n") + 1)]
    except _Recursive as exc:
        return None, source, [YamlProblem("recursive YAML alias", exc.line + line_offset)]
    except (ValueError, TypeError, RecursionError) as exc:  # e.g. unhashable keys, deep nesting
        return None, source, [YamlProblem(f"invalid YAML: {exc}", line_offset + 1)]
    finally:
        loader.dispose()
    if builder.aliased:
        bomb = _alias_problem(node, line_offset)
        if bomb is not None:
            return None, source, [bomb]
    return data, source, builder.problems


_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"


class _Recursive(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class _Builder:
    """Nodes -> Python values in one walk that also records each key's line and duplicates
    (faster than constructing and then walking the nodes a second time)."""

    def __init__(self, loader: Any, lines: dict[Loc, int], offset: int) -> None:
        self.loader = loader
        self.lines = lines
        self.offset = offset
        self.problems: list[YamlProblem] = []
        self.memo: dict[int, Any] = {}
        self.active: set[int] = set()
        self.aliased = False

    def value(self, node: yaml.Node, loc: Loc) -> Any:
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR:
                return node.value
            construct = self.loader.yaml_constructors.get(node.tag)
            if construct is None:  # unknown tag: PyYAML raises its usual error
                return self.loader.construct_object(node, True)
            return construct(self.loader, node)
        key = id(node)
        if key in self.memo:
            self.aliased = True
            return self.memo[key]
        if key in self.active:
            raise _Recursive(node.start_mark.line + 1)
        self.active.add(key)
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP and not _merges(node):
            result: Any = self.mapping(node, loc)
        elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            result = self.sequence(node, loc)
        else:  # merge keys, sets, omaps, custom tags: PyYAML's own rules (and errors)
            result = self.loader.construct_object(node, True)
        self.active.discard(key)
        self.memo[key] = result
        return result

    def mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.value(key_node, loc)
            line = key_node.start_mark.line + 1 + self.offset
            if key in result:
                self.problems.append(
                    YamlProblem(
                        f"duplicate key {key!r} (the last one would silently win)",
                        line,
                        kind="duplicate",
                    )
                )
            child = (*loc, key)
            self.lines[child] = line
            result[key] = self.value(value_node, child)
        return result

    def sequence(self, node: yaml.SequenceNode, loc: Loc) -> list[Any]:
        items = []
        for index, item in enumerate(node.value):
            child = (*loc, index)
            self.lines[child] = item.start_mark.line + 1 + self.offset
            items.append(self.value(item, child))
        return items


def _merges(node: yaml.MappingNode) -> bool:
    return any(key.tag == _MERGE for key, _ in node.value)


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
