"""Python tools of tools.md: the code block executed (a run, ``validate --import-tools``) to
read the real function's schema, or only read (``folpipe validate``: ``loader.toolstatic``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...authoring import ToolDefinitionError, describe_function, tool_meta
from ...workflow.tree import ToolSpec
from ._code import describe_exception, load_code_block
from ._section import Source, spec_of
from ._static import StaticProblem, pick_static_function, read_source, static_schema


def build_python(source: Source, metadata: dict[str, Any]) -> ToolSpec | None:
    if not source.import_tools:
        return _build_python_static(source, metadata)
    block = source.parsed.code
    assert block is not None
    file = source.file.absolute()
    try:
        module = load_code_block(block.code, source_file=str(file), line=block.line)
    except (Exception, SystemExit) as exc:  # SystemExit / os._exit: see loader.code
        _report_load_error(source, exc, file)
        return None
    function = _pick_function(source, module.__dict__, metadata)
    if function is None:
        return None
    descriptions = {e.name: e.schema.get("description", "") for e in source.parsed.params or []}
    try:
        schema, doc_text = describe_function(function, descriptions=descriptions)
    except ToolDefinitionError as exc:
        source.report("FP216", str(exc), function.__code__.co_firstlineno, SIGNATURE_HINT)
        return None
    meta = tool_meta(function)
    merged = {**(meta.metadata() if meta else {}), **metadata}
    return spec_of(
        source,
        merged,
        description=source.parsed.description or doc_text,
        parameters=schema.parameters,
        code=block.code,
        function_name=function.__name__,
    )


SIGNATURE_HINT = "annotate parameters with JSON-friendly types (str, int, list[str], ...)"


def _report_load_error(source: Source, exc: BaseException, file: Path) -> None:
    block = source.parsed.code
    assert block is not None
    if isinstance(exc, StaticProblem):
        message, line = str(exc), exc.line
    else:
        message, line = describe_exception(exc, file)
    code = "FP210" if isinstance(exc, SyntaxError) else "FP219"
    source.report(code, f"python tool {source.section.name!r}: {message}", line or block.line)


def _build_python_static(source: Source, metadata: dict[str, Any]) -> ToolSpec | None:
    """The python tool as its code block declares it, without executing the block."""
    block = source.parsed.code
    assert block is not None
    file = source.file.absolute()
    name = source.section.name
    try:
        module = read_source(block.code, str(file), line=block.line)
    except (SyntaxError, StaticProblem) as exc:
        _report_load_error(source, exc, file)
        return None
    wanted = metadata.get("function") or name
    function = pick_static_function(module, wanted, name, "function" in metadata)
    if function is None:
        _no_function(source, wanted, list(module.functions))
        return None
    descriptions = {e.name: e.schema.get("description", "") for e in source.parsed.params or []}
    try:
        parameters, doc_text = static_schema(function, descriptions)
    except ToolDefinitionError as exc:
        source.report("FP216", str(exc), function.line, SIGNATURE_HINT)
        return None
    merged = {**(function.meta.metadata() if function.meta else {}), **metadata}
    return spec_of(
        source,
        merged,
        description=source.parsed.description or doc_text,
        parameters=parameters,
        code=block.code,
        function_name=function.name,
    )


def _no_function(source: Source, wanted: str, found: list[str]) -> None:
    source.report(
        "FP211",
        f"python tool {source.section.name!r}: no function named {wanted!r} in the code block "
        f"(functions found: {', '.join(found) or 'none'})",
        hint=f"name the function {source.section.name!r}, or set '> function: <name>'",
    )


def _pick_function(
    source: Source, namespace: Mapping[str, Any], metadata: dict[str, Any]
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
    _no_function(source, wanted, list(functions))
    return None
