"""Python tools: tools.md code-block functions and ``@tool`` functions from ``tools/*.py``.

Sync functions run in a worker thread (``asyncio.to_thread``), async ones are awaited. A
function whose first parameter is ``ctx`` (or annotated ``ToolContext``) receives the task's
:class:`~prefect_folpipe.authoring._context.ToolContext`. Arguments are bound through the schema's
pydantic model, so a parameter annotated with a pydantic model receives an instance.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from ..authoring import FunctionSchema, ToolContext, function_schema
from ..authoring.agentflow import agentflow_imports, with_agentflow
from ..errors import ToolError
from ..loader.tools import load_code_block, load_tools_module
from ..workflow.printed import printed_to
from ..workflow.tree import ToolSpec


class ToolArgumentError(ToolError):
    """The model's arguments do not fit the tool's parameters (never retried)."""

    code = "FP231"


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


_FUNCTIONS: dict[tuple[str, str], tuple[Callable[..., Any], FunctionSchema]] = {}


def load_function(spec: ToolSpec) -> tuple[Callable[..., Any], FunctionSchema]:
    """The function implementing a python tool and its schema (cached per content hash)."""
    key = (spec.content_hash, spec.source_file)
    cached = _FUNCTIONS.get(key)
    if cached is not None:
        return cached
    if spec.module_file:
        module = load_tools_module(spec.module_file)
    elif spec.code is not None:
        module = load_code_block(spec.code, source_file=spec.source_file, line=spec.code_line or 1)
    else:
        raise ToolError(f"python tool {spec.name!r} has neither code nor a module")
    function = getattr(module, spec.function_name or spec.name, None)
    if not callable(function):
        raise ToolError(f"python tool {spec.name!r}: function {spec.function_name!r} not found")
    loaded = (function, function_schema(function))
    _FUNCTIONS[key] = loaded
    return loaded


async def run_python(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
    """Call a python tool with validated arguments; return what it returned.

    A tool (or its module, loaded on first use) that raises ``SystemExit`` fails the call
    (FP232), like any exception: it never ends the run."""
    with printed_to(ctx.logger, f"tool {spec.name}"):  # its print()s: the task's log, masked
        return await _run(spec, arguments, ctx)


async def _run(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
    try:
        function, schema = load_function(spec)
    except SystemExit as exc:
        raise ToolError(f"loading python tool {spec.name!r} raised SystemExit: {exc}") from None
    try:
        kwargs = schema.bind(arguments)
    except ValidationError as exc:
        raise ToolArgumentError(_validation_text(exc)) from None
    args = (ctx,) if schema.wants_context else ()
    try:
        if schema.is_async:
            with agentflow_imports():
                return await function(*args, **kwargs)
        call = functools.partial(with_agentflow(function), *args, **kwargs)
        return await asyncio.to_thread(call)
    except SystemExit as exc:
        raise ToolError(f"python tool {spec.name!r} raised SystemExit: {exc}") from None
