"""tools.md: each ``## name`` section becomes a ToolSpec.

Python code blocks are the workflow author's own code. With ``import_tools=True`` (a run,
``validate --import-tools``) they are executed to derive argument schemas from the real
function; with ``import_tools=False`` (``folpipe validate``) they are only read
(``loader.toolstatic``). ``tools/*.py`` modules: ``loader.toolmodules``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..._process.files import read_workflow_file
from ...authoring import empty_schema
from ...errors import Severity, did_you_mean
from ...workflow.envnames import is_dangerous_env_name
from ...workflow.tree import ToolSpec
from . import _markdown as markdown
from . import parsecache
from ._defs import (
    CODE_KINDS,
    COMMON_KEYS,
    KIND_KEYS,
    KINDS,
    NAME_HINT,
    TOOL_NAME,
    Diagnostics,
    diagnostic,
    metadata_value,
)
from ._python import build_python
from ._section import Source, spec_of
from ._shellparams import CMD_VAR, infer_shell_params


def parse_tools_md(
    path: str | Path,
    *,
    owner: str,
    import_tools: bool = True,
    blobs: dict[str, bytes] | None = None,
) -> tuple[list[ToolSpec], Diagnostics]:
    """Parse a tools.md file into ToolSpecs; every problem becomes a diagnostic.

    ``import_tools=False`` reads python code blocks without executing them. The file's bytes
    go into ``blobs`` (by path) for the content hash. A file whose stat (inode, size, times)
    is unchanged since it was last parsed in this process is not read again: its tools and
    diagnostics come from the cache (loading a big workflow twice, ``folpipe serve``); a
    static reading of bytes read before, in any process, from ``loader.parsecache``. Bytes
    already in ``blobs`` (the other build of the same load read them) are parsed, or taken
    from the cache when it holds these very bytes, without a stat."""
    name = str(path)
    key = (name, owner, import_tools)
    hit = _PARSED.get(key)
    read = blobs.get(name) if blobs is not None else None
    if read is not None and hit is not None and hit[1] == read:
        # this load read these bytes already (the vetting before an import): no stat
        return list(hit[2]), list(hit[3])
    file = Path(path)
    twin = _PARSED.get((name, owner, not import_tools)) if read is not None else None
    if twin is not None and twin[1] == read:
        stamp = twin[0]  # the stat this load's other build took of these bytes
    else:
        try:
            stat = os.stat(name)
        except OSError as exc:
            return [], [diagnostic("FP217", f"cannot read tools.md: {exc}", file, None, owner)]
        stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if read is None and hit is not None and hit[0] == stamp:
        _, data, tools, diagnostics = hit
    else:
        try:
            data = blobs.get(name) if blobs is not None else None
            if data is None:  # else read by this load already (the vetting before an import)
                data = read_workflow_file(name)
            text = data.decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            return [], [diagnostic("FP217", f"cannot read tools.md: {exc}", file, None, owner)]
        if import_tools:
            tools, diagnostics = _parse_text(text, file, owner, import_tools)
        else:  # a static reading depends on the bytes (and imports found): kept on disk
            tools, diagnostics = parsecache.cached_parse(
                data, name, owner, lambda: _parse_text(text, file, owner, False)
            )
        if len(_PARSED) >= MAX_PARSED:
            _PARSED.clear()
        _PARSED[key] = (stamp, data, tools, diagnostics)
    if blobs is not None:
        blobs[name] = data
    return list(tools), list(diagnostics)


MAX_PARSED = 8192
_PARSED: dict[tuple[str, str, bool], tuple[tuple[int, ...], bytes, list[ToolSpec], Diagnostics]]
_PARSED = {}
"""(file, owner, import_tools) -> (its stat when parsed, its bytes, tools, diagnostics)."""


def _parse_text(
    text: str, file: Path, owner: str, import_tools: bool
) -> tuple[list[ToolSpec], Diagnostics]:
    tools: list[ToolSpec] = []
    diagnostics: Diagnostics = []
    seen: dict[str, int] = {}
    for section in markdown.split_sections(text):
        spec = _tool_from_section(section, file, owner, diagnostics, import_tools)
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


def _tool_from_section(
    section: markdown.Section,
    file: Path,
    owner: str,
    diagnostics: Diagnostics,
    import_tools: bool = True,
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
                NAME_HINT,
            )
        )
        return None
    parsed = markdown.parse_section(section)
    source = Source(section, parsed, file, owner, diagnostics, import_tools)
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


def _read_metadata(source: Source) -> tuple[str | None, dict[str, Any]]:
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
            metadata[key] = metadata_value(key, value)
        except ValueError as exc:
            source.report("FP208", f"metadata {key!r}: {exc}", line)
    metadata["type"] = kind
    return kind, metadata


def _check_code_block(kind: str, source: Source) -> None:
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


def _build_shell(source: Source, metadata: dict[str, Any]) -> ToolSpec | None:
    assert source.parsed.code is not None
    script = source.parsed.code.code
    parameters = _parameters(source, metadata, lambda: infer_shell_params(script))
    cmd_vars = sorted(set(CMD_VAR.findall(script)))
    if cmd_vars:
        source.report(
            "FP229",
            f"shell tool {source.section.name!r} reads {', '.join(f'%{v}%' for v in cmd_vars)} "
            "(Windows cmd syntax): bash does not expand it",
            source.parsed.code.line,
            f"write ${cmd_vars[0]} instead (the value is set under both spellings)",
            warning=True,
        )
    if parameters is None or not _safe_env_names(source, parameters):
        return None
    return spec_of(source, metadata, parameters=parameters, code=script)


def _safe_env_names(source: Source, parameters: Mapping[str, Any]) -> bool:
    """FP237 for shell parameters that would set ``GIT_SSH_COMMAND``, ``LD_PRELOAD``, ..."""
    bad = [name for name in parameters.get("properties", {}) if is_dangerous_env_name(name)]
    for name in bad:
        source.report(
            "FP237",
            f"shell tool {source.section.name!r}: parameter {name!r} would set the environment "
            f"variable {name.upper()}, which changes how programs run",
            hint="rename the parameter (shell tools get their arguments as variables)",
        )
    return not bad


def _parameters(
    source: Source, metadata: dict[str, Any], default: Callable[[], dict[str, Any]]
) -> dict[str, Any] | None:
    """The schema of the declared parameters (``default()`` when none are declared), or None
    when they have errors."""
    entries, ok = _declared_params(source, metadata)
    if not ok:
        return None
    return markdown.params_schema(entries) if entries is not None else default()


def _declared_params(
    source: Source, metadata: dict[str, Any]
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


def _has_key(source: Source, metadata: dict[str, Any], key: str, hint: str) -> bool:
    """Whether the metadata sets ``key``; FP212 when it does not."""
    if metadata.get(key):
        return True
    source.report(
        "FP212", f"{metadata['type']} tool {source.section.name!r} has no {key}", hint=hint
    )
    return False


def _build_http(source: Source, metadata: dict[str, Any]) -> ToolSpec | None:
    if not _has_key(source, metadata, "url", "add '> url: https://...'"):
        return None
    metadata.setdefault("method", "GET")
    parameters = _parameters(source, metadata, empty_schema)
    if parameters is None:
        return None
    code = source.parsed.code.code if source.parsed.code else None
    return spec_of(source, metadata, parameters=parameters, code=code)


def _build_mcp(source: Source, metadata: dict[str, Any]) -> ToolSpec | None:
    if not _has_key(source, metadata, "server", "add '> server: <name of an mcp_servers entry>'"):
        return None
    metadata.setdefault("tool", source.section.name)
    parameters = _parameters(source, metadata, lambda: empty_schema(additional=True))
    if parameters is None:
        return None
    return spec_of(source, metadata, parameters=parameters)


def _build_reference(source: Source, metadata: dict[str, Any]) -> ToolSpec | None:
    return spec_of(source, metadata, parameters=empty_schema())


_BUILDERS: dict[str, Callable[[Source, dict[str, Any]], ToolSpec | None]] = {
    "python": build_python,
    "shell": _build_shell,
    "http": _build_http,
    "mcp": _build_mcp,
    "reference": _build_reference,
}
