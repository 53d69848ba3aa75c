"""``tools/*.py``: ``@tool`` functions of a task's tools folder become ToolSpecs,
and ``discover_tools`` gives a task's own tools (tools.md + tools/, tools/ wins on a clash).

``import_tools=True`` imports each module (a run, ``validate --import-tools``);
``import_tools=False`` (``folpipe validate``) reads it with ``loader.toolstatic`` instead."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..._process.files import MAX_WORKFLOW_FILE, check_regular, read_workflow_file
from ...authoring import ToolDefinitionError, ToolMeta, describe_function, tool_meta
from ...authoring.agentflow import ROOT as AGENTFLOW
from ...authoring.agentflow import SUPPORTED_HINT
from ...workflow.tree import ToolSpec
from ._code import describe_exception, load_tools_module, tools_dir_digest
from ._defs import NAME_HINT, TOOL_NAME, Diagnostics, content_hash, diagnostic
from ._python import SIGNATURE_HINT
from ._static import StaticProblem, decorated_functions, read_source, static_schema
from ._toolsmd import parse_tools_md


def discover_module_tools(
    tools_dir: str | Path, *, owner: str, quiet: bool = False, import_tools: bool = True
) -> tuple[list[ToolSpec], Diagnostics]:
    """``@tool`` functions of ``tools/*.py`` (files starting with ``_`` are helpers).

    ``quiet``: a module that does not mention ``@tool`` is not imported, and one without a tool
    is not reported (``scripts/`` beside a SKILL.md also holds plain scripts)."""
    tools: list[ToolSpec] = []
    diagnostics: Diagnostics = []
    if not os.path.isdir(tools_dir):
        return tools, diagnostics
    folder = Path(tools_dir)
    digest = tools_dir_digest(folder)
    seen: dict[str, ToolSpec] = {}
    for file in sorted(folder.glob("*.py")):
        if file.name.startswith("_") or (quiet and not mentions_tool(file)):
            continue
        read = _tools_of_module if import_tools else _static_tools_of_module
        found, problems = read(file, digest, owner)
        diagnostics.extend(p for p in problems if not (quiet and p.code == "FP215"))
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


def mentions_tool(file: Path) -> bool:
    """Whether a module's text mentions ``@tool`` (a cheap test, nothing is imported)."""
    try:
        return "@tool" in read_workflow_file(file).decode("utf-8", errors="replace")
    except OSError:
        return False


def _import_failed(
    file: Path, message: str, line: int | None, owner: str, exc: BaseException | None = None
) -> Diagnostics:
    return [
        diagnostic(
            "FP214",
            f"tools module {file.name} failed to import: {message}",
            file,
            line,
            owner,
            _import_hint(exc),
        )
    ]


def _import_hint(exc: BaseException | None) -> str:
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    if missing and (missing == AGENTFLOW or missing.startswith(f"{AGENTFLOW}.")):
        return SUPPORTED_HINT
    return "fix the module, or declare missing packages under 'dependencies' in task.yaml"


def _no_tools(file: Path, owner: str) -> Diagnostics:
    return [
        diagnostic(
            "FP215",
            f"tools module {file.name} defines no @tool function",
            file,
            None,
            owner,
            "decorate tool functions with @tool, or prefix helper modules with '_'",
            warning=True,
        )
    ]


def _static_tools_of_module(
    file: Path, digest: str, owner: str
) -> tuple[list[ToolSpec], Diagnostics]:
    """The ``@tool`` functions of a module as its source declares them (nothing runs)."""
    try:
        text = read_workflow_file(file).decode("utf-8")
        module = read_source(text, str(file.absolute()), tools_dir=file.parent)
    except SyntaxError as exc:
        return [], _import_failed(file, f"SyntaxError: {exc.msg}", exc.lineno, owner)
    except StaticProblem as exc:
        missing = ModuleNotFoundError(str(exc), name=exc.module) if exc.module else None
        return [], _import_failed(file, str(exc), exc.line, owner, missing)
    except (OSError, UnicodeDecodeError) as exc:
        return [], _import_failed(file, f"{type(exc).__name__}: {exc}", None, owner)
    tools: list[ToolSpec] = []
    diagnostics: Diagnostics = []
    for function in decorated_functions(module):
        meta, line = function.meta, function.line
        assert meta is not None
        if not _valid_name(meta.name, file, line, owner, diagnostics):
            continue
        try:
            schema, description = static_schema(function)
        except ToolDefinitionError as exc:
            diagnostics.append(diagnostic("FP216", str(exc), file, line, owner, SIGNATURE_HINT))
            continue
        tools.append(_spec_of(file, function.name, meta, line, schema, description, digest, owner))
    if not tools and not diagnostics:
        diagnostics = _no_tools(file, owner)
    return tools, diagnostics


def _tools_of_module(file: Path, digest: str, owner: str) -> tuple[list[ToolSpec], Diagnostics]:
    try:  # a FIFO would hang the import, a sparse file of gigabytes fill the memory
        check_regular(file, MAX_WORKFLOW_FILE)
    except OSError as exc:
        return [], _import_failed(file, f"{type(exc).__name__}: {exc.strerror}", None, owner)
    try:
        module = load_tools_module(file, digest=digest)
    except (Exception, SystemExit) as exc:  # SystemExit / os._exit at import: see loader.code
        message, line = describe_exception(exc, file.absolute())
        return [], _import_failed(file, message, line, owner, exc)
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
        diagnostics = _no_tools(file, owner)
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
    if not _valid_name(meta.name, file, line, owner, diagnostics):
        return None
    try:
        schema, description = describe_function(function)
    except ToolDefinitionError as exc:
        diagnostics.append(diagnostic("FP216", str(exc), file, line, owner, SIGNATURE_HINT))
        return None
    return _spec_of(file, attribute, meta, line, schema.parameters, description, digest, owner)


def _valid_name(
    name: str, file: Path, line: int | None, owner: str, diagnostics: Diagnostics
) -> bool:
    if TOOL_NAME.match(name):
        return True
    diagnostics.append(
        diagnostic("FP203", f"invalid tool name {name!r}", file, line, owner, NAME_HINT)
    )
    return False


def _spec_of(
    file: Path,
    attribute: str,
    meta: ToolMeta,
    line: int | None,
    parameters: dict[str, Any],
    description: str,
    digest: str,
    owner: str,
) -> ToolSpec:
    metadata = {"type": "python", **meta.metadata()}
    if meta.scope != "shared":
        metadata["scope"] = meta.scope
    return ToolSpec(
        name=meta.name,
        kind="python",
        description=description,
        parameters=parameters,
        source_file=str(file.absolute()),
        line=line,
        module_file=str(file.absolute()),
        function_name=attribute,
        metadata=metadata,
        scope=meta.scope,
        owner=owner,
        # the module's source, not what importing it gave: the same when only read (plan)
        content_hash=content_hash(kind="python", name=meta.name, module=digest, function=attribute),
    )


def discover_tools(
    task_dir: str | Path,
    *,
    owner: str,
    import_tools: bool = True,
    blobs: dict[str, bytes] | None = None,
    has_tools_md: bool | None = None,
    has_tools_dir: bool | None = None,
) -> tuple[list[ToolSpec], Diagnostics]:
    """A task's own tools: tools.md plus tools/*.py; a tools/ tool wins a name clash.
    ``import_tools=False`` reads the code without running it (``folpipe validate``); the
    bytes of tools.md go into ``blobs`` (see ``parse_tools_md``). ``has_tools_md`` /
    ``has_tools_dir``: whether the folder's listing showed a tools.md file / a tools entry
    (``None``: look)."""
    diagnostics: Diagnostics = []
    md_tools: list[ToolSpec] = []
    tools_md = os.path.join(task_dir, "tools.md")
    if has_tools_md if has_tools_md is not None else os.path.isfile(tools_md):
        md_tools, problems = parse_tools_md(
            tools_md, owner=owner, import_tools=import_tools, blobs=blobs
        )
        diagnostics.extend(problems)
    module_tools: list[ToolSpec] = []
    if has_tools_dir is not False:
        module_tools, problems = discover_module_tools(
            os.path.join(task_dir, "tools"), owner=owner, import_tools=import_tools
        )
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
