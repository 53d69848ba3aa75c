"""task.yaml data -> TaskConfig, with every schema problem as a diagnostic at its line."""

from __future__ import annotations

import re
from inspect import isclass
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import Diagnostic, suggest
from ..workflow.config import OUTPUT_TYPES, TaskConfig
from ._yaml import Loc, SourceMap

_TYPE_SYNONYMS = {
    "string": "str",
    "text": "str",
    "integer": "int",
    "number": "float",
    "double": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "mapping": "dict",
}
SCHEMA_HINT = "run `folpipe schema` for every key and its type"
_UNION_FORMS = {
    "output": "a list of key names, or a mapping of key: type",
    "inherit_tools": "true, false or a list of tool names",
    "skip_if": "an expression string or a {key: ..., equals: ...} mapping",
    "until": "an expression string or a {key: ..., equals: ...} mapping",
    "retry_delay_seconds": "a number of seconds or a list of them",
    "default": "the name of a provider block",
}
"""Plain words for fields whose type is a union (pydantic would list one error per branch)."""


def dotted(loc: Loc) -> str:
    """``('subtasks', 'order', 0)`` -> ``subtasks.order[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<document>"


def parse_config(
    data: Any, source: SourceMap, task: str
) -> tuple[TaskConfig, dict[str, Any], list[Diagnostic]]:
    """Validate task.yaml data. Keys that fail are dropped so the rest still loads."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return TaskConfig(), {}, [_not_a_mapping(data, source, task)]
    data, diagnostics = _check_output_types(dict(data), source, task)
    try:
        config = TaskConfig.model_validate(data)
    except ValidationError as exc:
        diagnostics += _schema_diagnostics(exc, data, source, task)
        config, data = _salvage(exc, data)
    diagnostics += _check_values(config, source, task)
    return config, data, diagnostics


def _salvage(exc: ValidationError, data: dict[str, Any]) -> tuple[TaskConfig, dict[str, Any]]:
    """Drop what failed (the key, else its top-level key) so the rest still loads."""
    pruned = data
    for err in exc.errors():
        pruned = _without(pruned, _data_path(err["loc"], data))
    try:
        return TaskConfig.model_validate(pruned), pruned
    except ValidationError as again:
        failed = {err["loc"][0] for err in [*exc.errors(), *again.errors()] if err["loc"]}
    kept = {k: v for k, v in data.items() if k not in failed}
    try:
        return TaskConfig.model_validate(kept), kept
    except ValidationError:
        return TaskConfig(), {}


def _without(data: dict[str, Any], path: Loc) -> dict[str, Any]:
    """A copy of ``data`` without the mapping key nearest to the end of ``path``."""
    keys = list(path)
    while keys and isinstance(keys[-1], int):
        keys.pop()
    if not keys:
        return data
    head, rest = keys[0], tuple(keys[1:])
    if head not in data:
        return data
    if not rest or not isinstance(data[head], dict):
        return {k: v for k, v in data.items() if k != head}
    return {**data, head: _without(data[head], rest)}


def _not_a_mapping(data: Any, source: SourceMap, task: str) -> Diagnostic:
    return Diagnostic(
        "FP104",
        f"{source.file.rsplit('/', 1)[-1]} must be a mapping of keys, not {type(data).__name__}",
        source.file,
        source.line(),
        task,
        "write `key: value` lines, e.g. `description: fetch the data`",
    )


def _check_output_types(
    data: dict[str, Any], source: SourceMap, task: str
) -> tuple[dict[str, Any], list[Diagnostic]]:
    output = data.get("output")
    if not isinstance(output, dict):
        return data, []
    diagnostics = []
    cleaned = dict(output)
    for key, kind in output.items():
        if kind is None or (isinstance(kind, str) and kind in OUTPUT_TYPES):
            continue
        close = _TYPE_SYNONYMS.get(str(kind).lower()) or suggest(kind, list(OUTPUT_TYPES))
        hint = f"did you mean {close!r}? " if close else ""
        diagnostics.append(
            Diagnostic(
                "FP125",
                f"output {key!r} has unsupported type {kind!r}",
                source.file,
                source.line(("output", key)),
                task,
                hint + f"supported types: {', '.join(OUTPUT_TYPES)} (or leave it empty)",
            )
        )
        cleaned[key] = None
    return {**data, "output": cleaned}, diagnostics


def _schema_diagnostics(
    exc: ValidationError, data: dict[str, Any], source: SourceMap, task: str
) -> list[Diagnostic]:
    grouped: dict[Loc, list[dict[str, Any]]] = {}
    for err in _mapping_branch(exc.errors(), data):
        if err["type"] == "extra_forbidden":  # unknown keys report one by one
            path: Loc = (*_data_path(err["loc"], data), "\0extra")
        elif err.get("\0deep"):  # inside the mapping branch of a union: the key itself
            path = _data_path(err["loc"], data)
        else:  # the branches of a union (list or dict, ...) report as one problem
            path = _data_path(_before_tag(err["loc"]), data)
        grouped.setdefault(path, []).append(err)
    out = []
    for path, errors in grouped.items():
        if path and path[-1] == "\0extra":
            out.append(_unknown_key(path[:-1], source, task))
        else:
            line = source.line(_data_path(errors[0]["loc"], data))
            out.append(_wrong_value(path, errors, source, task, line, data))
    return out


def _mapping_branch(errors: list[Any], data: dict[str, Any]) -> list[Any]:
    """Where a mapping was given for a union that also takes a scalar or a list (``cache:
    true | {across_runs, ttl}``, ``required: [a] | {a: str}``), only the errors of the branch
    that takes a mapping say what is wrong: the ones below the mapping's own keys."""
    by_union: dict[Loc, list[Any]] = {}
    for err in errors:
        by_union.setdefault(_data_path(_before_tag(err["loc"]), data), []).append(err)
    kept: list[Any] = []
    for path, group in by_union.items():
        deeper = [err for err in group if len(_data_path(err["loc"], data)) > len(path)]
        if isinstance(_value_at(data, path, None), dict) and deeper and len(deeper) < len(group):
            kept += [{**err, "\0deep": True} for err in _deepest(deeper, data)]
        else:
            kept += group
    return kept


def _deepest(errors: list[Any], data: dict[str, Any]) -> list[Any]:
    """Drop an error about a mapping when another one says what is wrong inside it (nested
    unions: ``pages: {type: integer}`` is about ``pages.type``)."""
    paths = [_data_path(err["loc"], data) for err in errors]
    return [
        err
        for err, path in zip(errors, paths, strict=True)
        if not (
            isinstance(_value_at(data, path, None), dict)
            and any(len(other) > len(path) and other[: len(path)] == path for other in paths)
        )
    ]


def _before_tag(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """``loc`` up to its first union-member tag (``('output', 'list[str]', 0)`` -> output)."""
    for index, part in enumerate(loc):
        if _is_tag(part) and part != "[key]":
            return loc[:index]
    return loc


def _unknown_key(path: Loc, source: SourceMap, task: str) -> Diagnostic:
    key, parent = path[-1], path[:-1]
    choices = allowed_keys(parent)
    close = suggest(key, choices)
    where = f" in {dotted(parent)}" if parent else ""
    hint = f"did you mean {close!r}?" if close else f"allowed keys: {', '.join(choices)}"
    return Diagnostic(
        "FP103", f"unknown key {key!r}{where}", source.file, source.line(path), task, hint
    )


def _wrong_value(
    path: Loc,
    errors: list[dict[str, Any]],
    source: SourceMap,
    task: str,
    line: int | None,
    data: dict[str, Any],
) -> Diagnostic:
    first = errors[0]
    if first["type"] == "invalid_key" or first["loc"][-1:] == ("[key]",):
        where = f" in {dotted(path[:-1])}" if len(path) > 1 else ""
        return Diagnostic(
            "FP104",
            f"key {path[-1]!r}{where} must be a string",
            source.file,
            line,
            task,
            "quote the key, e.g. '1': ...",
        )
    messages = list(dict.fromkeys(err["msg"] for err in errors))
    form = None
    if path and len(messages) > 1:
        block = path[0] == "providers" and len(path) == 2 and path[1] != "default"
        form = "a provider block (a mapping)" if block else _UNION_FORMS.get(str(path[-1]))
    if form is not None:
        messages = [f"expected {form}"]
    got = _short_repr(_value_at(data, path, first.get("input")))
    hint = SCHEMA_HINT
    for err in errors:
        expected = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
        close = suggest(err.get("input"), expected) if expected else None
        if close:
            hint = f"did you mean {close!r}?"
    return Diagnostic(
        "FP104",
        f"{dotted(path)}: {'; or '.join(messages)} (got {got})",
        source.file,
        line,
        task,
        hint,
    )


def _value_at(data: Any, path: Loc, default: Any) -> Any:
    for part in path:
        if not _has(data, part):
            return default
        data = data[part]
    return data


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _data_path(loc: tuple[Any, ...], data: Any) -> Loc:
    """Pydantic's loc minus union-member tags: only the steps that exist in the data."""
    path: list[str | int] = []
    current = data
    for part in loc:
        if _has(current, part):
            current = current[part]
            path.append(part)
        elif isinstance(current, dict) and not isinstance(part, int) and _is_tag(part):
            continue
        elif isinstance(current, dict | list):
            path.append(part)  # a missing or extra key: the error is about it
            current = None
    return tuple(path)


def _has(container: Any, part: Any) -> bool:
    if isinstance(container, dict):
        return part in container
    return isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container)


_MEMBER_NAMES = frozenset({"bool", "str", "int", "float", "InputField", "CacheSettings"})
"""Union members pydantic names by their type alone (``cache.bool``, ``cache.CacheSettings``)."""


def _is_tag(part: Any) -> bool:
    """Union-member and validator tags such as ``list[str]`` or ``function-after[...]``."""
    if not isinstance(part, str):
        return False
    return part in _MEMBER_NAMES or bool(re.search(r"[\[\]()-]", part))


def allowed_keys(parent: Loc) -> list[str]:
    """Keys the schema allows in the mapping at ``parent`` (for "did you mean")."""
    annotation: Any = TaskConfig
    for part in parent:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    names: list[str] = []
    for member in _members(annotation):
        if isclass(member) and issubclass(member, BaseModel):
            names += [f.alias or name for name, f in member.model_fields.items()]
    return names


def _members(annotation: Any) -> tuple[Any, ...]:
    origin = get_origin(annotation)
    if origin is Union or (origin is not None and str(origin) == "types.UnionType"):
        return get_args(annotation)
    if type(annotation).__name__ == "UnionType":
        return get_args(annotation)
    return (annotation,)


def _step(annotation: Any, part: str | int) -> Any:
    for member in _members(annotation):
        if isclass(member) and issubclass(member, BaseModel):
            for name, field in member.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
        origin = get_origin(member)
        if origin is dict and isinstance(part, str):
            return get_args(member)[1]
        if origin is list and isinstance(part, int):
            return get_args(member)[0]
    return None


def _check_values(config: TaskConfig, source: SourceMap, task: str) -> list[Diagnostic]:
    timeout = config.settings.timeout
    if config.settings.time_limit is None or timeout > 0:  # type: ignore[operator]
        return []
    return [
        Diagnostic(
            "FP104",
            f"settings.timeout: must be a positive number of seconds, or -1 for no limit "
            f"(got {timeout!r})",
            source.file,
            source.line(("settings", "timeout")),
            task,
            "use e.g. `timeout: 120`, or `timeout: -1` to run without a limit",
        )
    ]
