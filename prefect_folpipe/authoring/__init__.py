"""The tool author's API: ``@tool``, ``Hook``, ``ToolContext``, file-access grants, and the
JSON Schema of a tool's arguments read from its signature and docstring.
"""

from __future__ import annotations

from ._context import ToolContext
from ._grants import resolve_path
from ._marker import Hook, ToolMeta, describe_function, tool, tool_meta
from ._schema import (
    UNKNOWN_DEFAULT,
    FunctionSchema,
    Param,
    ToolDefinitionError,
    empty_schema,
    function_schema,
    keyword_only_error,
    object_schema,
    parameters_schema,
    parse_docstring,
)

__all__ = [
    "UNKNOWN_DEFAULT",
    "FunctionSchema",
    "Hook",
    "Param",
    "ToolContext",
    "ToolDefinitionError",
    "ToolMeta",
    "describe_function",
    "empty_schema",
    "function_schema",
    "keyword_only_error",
    "object_schema",
    "parameters_schema",
    "parse_docstring",
    "resolve_path",
    "tool",
    "tool_meta",
]
