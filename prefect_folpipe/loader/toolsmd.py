"""Tool discovery (spec §2.8, §7): a task's ``tools.md`` and ``tools/*.py`` become ToolSpecs.

Author mistakes never raise: they come back as diagnostics (FP202-FP219) with file and line,
and the broken tool is left out. Python code (tools.md code blocks and ``tools/`` modules) is
the workflow author's own and is loaded here to derive argument schemas from type hints.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import Diagnostic, Severity, did_you_mean
from ..workflow.marker import describe_function, tool_meta
from ..workflow.toolschema import ToolDefinitionError, empty_schema, object_schema
from ..workflow.tree import ToolSpec
from . import markdown
from .code import (
    describe_exception,
    load_code_block,
    load_tools_module,
    tools_dir_digest,
)

KINDS = ("python", "shell", "http", "mcp", "reference")
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_NAME_HINT = "use letters, digits, '_' or '-' (at most 64), starting with a letter or '_'"
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
COMMON_KEYS = ("type", "scope", "timeout", "retries", "env")
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
SHELL_ENV_NAMES = frozenset(
    {
        "PATH", "PATHEXT", "TEMP", "TMP", "TMPDIR", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR",
        "COMSPEC", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "COLORTERM", "SHELL", "HOME", "PWD",
        "OLDPWD", "IFS", "RANDOM", "LINENO", "SECONDS", "HOSTNAME", "UID", "EUID", "PPID",
        "OPTARG", "OPTIND", "REPLY", "PIPESTATUS", "FUNCNAME", "BASH_SOURCE", "BASH_REMATCH",
        "FOLPIPE_CONTEXT",
    }
)  # fmt: skip
_SHELL_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(:?[-=?+])?")
_SHELL_ASSIGN = re.compile(
    r"(?:^|[;&|\s(])(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?"
    r"([A-Za-z_][A-Za-z0-9_]*)\+?=|\bfor\s+([A-Za-z_]\w*)\s+in\b|\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*)"
)

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


# --------------------------------------------------------------------------- tools.md


def parse_tools_md(path: str | Path, *, owner: str) -> tuple[list[ToolSpec], Diagnostics]:
    """Parse a tools.md file into ToolSpecs; every problem becomes a diagnostic."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [diagnostic("FP217", f"cannot read tools.md: {exc}", file, None, owner)]
    tools: list[ToolSpec] = []
    diagnostics: Diagnostics = []
    seen: dict[str, int] = {}
    for section in markdown.split_sections(text):
        spec = _tool_from_section(section, file, owner, diagnostics)
        if spec is None:
            continue
        if spec.name in seen:
            diagnostics.append(
                diagnostic(
                    "FP204",
                    f"tool {spec.name!r} is defined twice (first at line {seen[spec.name]})",
                    file,
                    section.line,
                    owner,
                    "rename one of the tools",
                )
            )
            continue
        seen[spec.name] = section.line
        tools.append(spec)
    return tools, diagnostics


@dataclass
class _Source:
    """One parsed tools.md section on its way to a ToolSpec, and where its problems go."""

    section: markdown.Section
    parsed: markdown.ParsedSection
    file: Path
    owner: str
    diagnostics: Diagnostics

    def report(
        self,
        code: str,
        message: str,
        line: int | None = None,
        hint: str | None = None,
        *,
        warning: bool = False,
    ) -> None:
        """Add a diagnostic at ``line`` (default: the section's heading)."""
        at = self.section.line if line is None else line
        self.diagnostics.append(
            diagnostic(code, message, self.file, at, self.owner, hint, warning=warning)
        )


def _tool_from_section(
    section: markdown.Section, file: Path, owner: str, diagnostics: Diagnostics
) -> ToolSpec | None:
    if not section.name:
        diagnostics.append(
            diagnostic(
                "FP202", "tool heading has no name", file, section.line, owner, "write '## name'"
            )
        )
        return None
    if not TOOL_NAME.match(section.name):
        diagnostics.append(
            diagnostic(
                "FP203",
                f"invalid tool name {section.name!r}",
                file,
                section.line,
                owner,
                _NAME_HINT,
            )
        )
        return None
    source = _Source(section, markdown.parse_section(section), file, owner, diagnostics)
    before = len(diagnostics)
    kind, metadata = _read_metadata(source)
    if kind is None:
        return None
    _check_code_block(kind, source)
    for message, line in source.parsed.param_errors:
        source.report("FP213", message, line, _PARAM_HINT)
    if _has_errors(diagnostics[before:]):
        return None
    return _BUILDERS[kind](source, metadata)


_PARAM_HINT = (
    "write '- name (type, default=value): description'; types: str int float bool list dict"
)


def _has_errors(diagnostics: Diagnostics) -> bool:
    return any(d.severity == Severity.ERROR for d in diagnostics)


def _read_metadata(source: _Source) -> tuple[str | None, dict[str, Any]]:
    """The tool kind and the typed metadata of a section."""
    parsed = source.parsed
    for body, line in parsed.bad_metadata:
        source.report("FP206", f"metadata line is not 'key: value': {body!r}", line)
    raw_type, type_line = parsed.metadata.get("type", ("python", source.section.line))
    kind = raw_type.strip().lower()
    if kind not in KINDS:
        source.report(
            "FP205",
            f"unknown tool type {raw_type!r} for tool {source.section.name!r}",
            type_line,
            did_you_mean(kind, KINDS) or f"use one of: {', '.join(KINDS)}",
        )
        return None, {}
    metadata: dict[str, Any] = {}
    known = COMMON_KEYS + KIND_KEYS[kind]
    for key, (value, line) in parsed.metadata.items():
        if key not in known:
            source.report(
                "FP207",
                f"unknown metadata key {key!r} for a {kind} tool",
                line,
                did_you_mean(key, known) or f"known keys: {', '.join(known)}",
                warning=True,
            )
        try:
            metadata[key] = _metadata_value(key, value)
        except ValueError as exc:
            source.report("FP208", f"metadata {key!r}: {exc}", line)
    metadata["type"] = kind
    return kind, metadata


def _metadata_value(key: str, value: str) -> Any:
    """Typed value of one metadata key; ValueError with a readable reason."""
    if key == "scope":
        if value.lower() not in ("shared", "local"):
            raise ValueError(f"must be 'shared' or 'local', not {value!r}")
        return value.lower()
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


def _check_code_block(kind: str, source: _Source) -> None:
    code, name = source.parsed.code, source.section.name
    if code is not None and not code.closed:
        source.report("FP209", "code block is not closed", code.line - 1)
    if kind in CODE_KINDS and (code is None or not code.code.strip()):
        source.report(
            "FP209",
            f"{kind} tool {name!r} has no code block",
            hint=f"add a fenced ```{'python' if kind == 'python' else 'bash'} block",
        )
    for line in source.parsed.extra_code_blocks:
        source.report(
            "FP218",
            f"tool {name!r} has more than one code block; only the first is used",
            line,
            warning=True,
        )


def _spec(
    source: _Source,
    metadata: dict[str, Any],
    *,
    parameters: Mapping[str, Any],
    description: str | None = None,
    code: str | None = None,
    function_name: str | None = None,
) -> ToolSpec:
    """The ToolSpec of a section; ``description`` defaults to the section's prose."""
    kind = metadata["type"]
    name = source.section.name
    description = source.parsed.description if description is None else description
    block = source.parsed.code
    return ToolSpec(
        name=name,
        kind=kind,
        description=description,
        parameters=parameters,
        source_file=str(source.file.absolute()),
        line=source.section.line,
        code=code,
        code_line=block.line if block is not None and code is not None else None,
        function_name=function_name,
        metadata=metadata,
        scope=metadata.get("scope", "shared"),
        owner=source.owner,
        content_hash=content_hash(
            kind=kind,
            name=name,
            description=description,
            parameters=parameters,
            code=code,
            metadata=metadata,
        ),
    )


def _build_python(source: _Source, metadata: dict[str, Any]) -> ToolSpec | None:
    block = source.parsed.code
    assert block is not None
    file = source.file.absolute()
    try:
        module = load_code_block(block.code, source_file=str(file), line=block.line)
    except Exception as exc:
        message, line = describe_exception(exc, file)
        code = "FP210" if isinstance(exc, SyntaxError) else "FP219"
        source.report(code, f"python tool {source.section.name!r}: {message}", line or block.line)
        return None
    function = _pick_function(source, module.__dict__, metadata)
    if function is None:
        return None
    descriptions = {e.name: e.schema.get("description", "") for e in source.parsed.params or []}
    try:
        schema, doc_text = describe_function(function, descriptions=descriptions)
    except ToolDefinitionError as exc:
        source.report("FP216", str(exc), function.__code__.co_firstlineno, _SIGNATURE_HINT)
        return None
    meta = tool_meta(function)
    merged = {**(meta.metadata() if meta else {}), **metadata}
    return _spec(
        source,
        merged,
        description=source.parsed.description or doc_text,
        parameters=schema.parameters,
        code=block.code,
        function_name=function.__name__,
    )


_SIGNATURE_HINT = "annotate parameters with JSON-friendly types (str, int, list[str], ...)"


def _pick_function(
    source: _Source, namespace: Mapping[str, Any], metadata: dict[str, Any]
) -> Callable[..., Any] | None:
    """The function a tools.md code block implements its tool with."""
    name = source.section.name
    module_name = namespace.get("__name__")
    functions = {
        attribute: value
        for attribute, value in namespace.items()
        if inspect.isfunction(value) and value.__module__ == module_name
    }
    wanted = metadata.get("function") or name
    if wanted in functions:
        return functions[wanted]
    marked = [f for f in functions.values() if (m := tool_meta(f)) and m.name == name]
    public = [f for attribute, f in functions.items() if not attribute.startswith("_")]
    choice = marked or public
    if len(choice) == 1 and "function" not in metadata:
        return choice[0]
    found = ", ".join(functions) or "none"
    source.report(
        "FP211",
        f"python tool {name!r}: no function named {wanted!r} in the code block "
        f"(functions found: {found})",
        hint=f"name the function {name!r}, or set '> function: <name>'",
    )
    return None


def _build_shell(source: _Source, metadata: dict[str, Any]) -> ToolSpec | None:
    assert source.parsed.code is not None
    script = source.parsed.code.code
    parameters = _parameters(source, metadata, lambda: infer_shell_params(script))
    if parameters is None:
        return None
    return _spec(source, metadata, parameters=parameters, code=script)


def _parameters(
    source: _Source, metadata: dict[str, Any], default: Callable[[], dict[str, Any]]
) -> dict[str, Any] | None:
    """The schema of the declared parameters (``default()`` when none are declared), or None
    when they have errors."""
    entries, ok = _declared_params(source, metadata)
    if not ok:
        return None
    return markdown.params_schema(entries) if entries is not None else default()


def _declared_params(
    source: _Source, metadata: dict[str, Any]
) -> tuple[list[markdown.ParamEntry] | None, bool]:
    """Parameters from ``> params:`` or a Parameters list (None when neither is given), and
    whether they were read without errors."""
    raw = metadata.get("params")
    if raw is None:
        return source.parsed.params, True
    line = source.parsed.metadata["params"][1]
    items = raw if isinstance(raw, list) else markdown.split_param_list(str(raw))
    errors: list[tuple[str, int]] = []
    entries = [
        entry
        for item in items
        if (entry := markdown.parse_param_item(str(item), line, errors)) is not None
    ]
    for message, number in errors:
        source.report("FP213", message, number, _PARAM_HINT)
    metadata["params"] = [entry.name for entry in entries]
    return entries, not errors


def infer_shell_params(script: str) -> dict[str, Any]:
    """Parameters of a shell script that declares none: the ``$VARS`` it reads.

    Variables the sandbox provides, shell specials and variables the script assigns itself are
    not parameters. ``${NAME:-default}`` makes a parameter optional. Names are lower-cased
    (the script sees both spellings).
    """
    assigned = {name for match in _SHELL_ASSIGN.finditer(script) for name in match.groups() if name}
    properties: dict[str, Any] = {}
    optional: set[str] = set()
    for match in _SHELL_VAR.finditer(script):
        var = match.group(1)
        if var in SHELL_ENV_NAMES or var in assigned or var.startswith("BASH"):
            continue
        name = var.lower()
        if match.group(2):
            optional.add(name)
        properties.setdefault(name, {"type": "string"})
    return object_schema(properties, [name for name in properties if name not in optional])


def _has_key(source: _Source, metadata: dict[str, Any], key: str, hint: str) -> bool:
    """Whether the metadata sets ``key``; FP212 when it does not."""
    if metadata.get(key):
        return True
    source.report(
        "FP212", f"{metadata['type']} tool {source.section.name!r} has no {key}", hint=hint
    )
    return False


def _build_http(source: _Source, metadata: dict[str, Any]) -> ToolSpec | None:
    if not _has_key(source, metadata, "url", "add '> url: https://...'"):
        return None
    metadata.setdefault("method", "GET")
    parameters = _parameters(source, metadata, empty_schema)
    if parameters is None:
        return None
    code = source.parsed.code.code if source.parsed.code else None
    return _spec(source, metadata, parameters=parameters, code=code)


def _build_mcp(source: _Source, metadata: dict[str, Any]) -> ToolSpec | None:
    if not _has_key(source, metadata, "server", "add '> server: <name of an mcp_servers entry>'"):
        return None
    metadata.setdefault("tool", source.section.name)
    parameters = _parameters(source, metadata, lambda: empty_schema(additional=True))
    if parameters is None:
        return None
    return _spec(source, metadata, parameters=parameters)


def _build_reference(source: _Source, metadata: dict[str, Any]) -> ToolSpec | None:
    return _spec(source, metadata, parameters=empty_schema())


_BUILDERS: dict[str, Callable[[_Source, dict[str, Any]], ToolSpec | None]] = {
    "python": _build_python,
    "shell": _build_shell,
    "http": _build_http,
    "mcp": _build_mcp,
    "reference": _build_reference,
}


# --------------------------------------------------------------------------- tools/*.py


def discover_module_tools(
    tools_dir: str | Path, *, owner: str
) -> tuple[list[ToolSpec], Diagnostics]:
    """``@tool`` functions of ``tools/*.py`` (files starting with ``_`` are helpers)."""
    folder = Path(tools_dir)
    tools: list[ToolSpec] = []
    diagnostics: Diagnostics = []
    if not folder.is_dir():
        return tools, diagnostics
    digest = tools_dir_digest(folder)
    seen: dict[str, ToolSpec] = {}
    for file in sorted(folder.glob("*.py")):
        if file.name.startswith("_"):
            continue
        found, problems = _tools_of_module(file, digest, owner)
        diagnostics.extend(problems)
        for spec in found:
            if spec.name in seen:
                first = seen[spec.name]
                diagnostics.append(
                    diagnostic(
                        "FP204",
                        f"tool {spec.name!r} is defined twice (first in "
                        f"{Path(first.source_file).name}:{first.line})",
                        file,
                        spec.line,
                        owner,
                        "rename one of the tools",
                    )
                )
                continue
            seen[spec.name] = spec
            tools.append(spec)
    return tools, diagnostics


def _tools_of_module(file: Path, digest: str, owner: str) -> tuple[list[ToolSpec], Diagnostics]:
    try:
        module = load_tools_module(file, digest=digest)
    except (Exception, SystemExit) as exc:
        message, line = describe_exception(exc, file.absolute())
        return [], [
            diagnostic(
                "FP214",
                f"tools module {file.name} failed to import: {message}",
                file,
                line,
                owner,
                "fix the module, or declare missing packages under 'dependencies' in task.yaml",
            )
        ]
    tools: list[ToolSpec] = []
    diagnostics: Diagnostics = []
    seen: set[int] = set()
    for attribute, value in vars(module).items():
        meta = tool_meta(value)
        if meta is None or not callable(value) or id(value) in seen:
            continue
        seen.add(id(value))
        spec = _module_tool(file, attribute, value, digest, owner, diagnostics)
        if spec is not None:
            tools.append(spec)
    if not tools and not diagnostics:
        diagnostics.append(
            diagnostic(
                "FP215",
                f"tools module {file.name} defines no @tool function",
                file,
                None,
                owner,
                "decorate tool functions with @tool, or prefix helper modules with '_'",
                warning=True,
            )
        )
    return tools, diagnostics


def _module_tool(
    file: Path,
    attribute: str,
    function: Callable[..., Any],
    digest: str,
    owner: str,
    diagnostics: Diagnostics,
) -> ToolSpec | None:
    meta = tool_meta(function)
    assert meta is not None
    line = getattr(getattr(function, "__code__", None), "co_firstlineno", None)
    if not TOOL_NAME.match(meta.name):
        diagnostics.append(
            diagnostic("FP203", f"invalid tool name {meta.name!r}", file, line, owner, _NAME_HINT)
        )
        return None
    try:
        schema, description = describe_function(function)
    except ToolDefinitionError as exc:
        diagnostics.append(diagnostic("FP216", str(exc), file, line, owner, _SIGNATURE_HINT))
        return None
    metadata = {"type": "python", **meta.metadata()}
    if meta.scope != "shared":
        metadata["scope"] = meta.scope
    return ToolSpec(
        name=meta.name,
        kind="python",
        description=description,
        parameters=schema.parameters,
        source_file=str(file.absolute()),
        line=line,
        module_file=str(file.absolute()),
        function_name=attribute,
        metadata=metadata,
        scope=meta.scope,
        owner=owner,
        content_hash=content_hash(
            kind="python",
            name=meta.name,
            description=description,
            parameters=schema.parameters,
            module=digest,
            function=attribute,
            metadata=metadata,
        ),
    )


def discover_tools(task_dir: str | Path, *, owner: str) -> tuple[list[ToolSpec], Diagnostics]:
    """A task's own tools: tools.md plus tools/*.py; a tools/ tool wins a name clash."""
    folder = Path(task_dir)
    diagnostics: Diagnostics = []
    md_tools: list[ToolSpec] = []
    tools_md = folder / "tools.md"
    if tools_md.is_file():
        md_tools, problems = parse_tools_md(tools_md, owner=owner)
        diagnostics.extend(problems)
    module_tools, problems = discover_module_tools(folder / "tools", owner=owner)
    diagnostics.extend(problems)
    overriding = {spec.name: spec for spec in module_tools}
    for spec in md_tools:
        if spec.name in overriding:
            diagnostics.append(
                diagnostic(
                    "FP224",
                    f"tool {spec.name!r} is defined in tools.md and in "
                    f"tools/{Path(overriding[spec.name].source_file).name}; the tools/ one is used",
                    spec.source_file,
                    spec.line,
                    owner,
                    "remove one of the two definitions",
                    warning=True,
                )
            )
    merged = [spec for spec in md_tools if spec.name not in overriding] + module_tools
    return merged, diagnostics
