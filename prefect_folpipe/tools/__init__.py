"""Tools: ``@tool``, ``ToolContext``, ``Hook``, discovery, inheritance and the tool runtime.

Public API (re-exported by ``prefect_folpipe``): :func:`tool`, :class:`ToolContext`,
:class:`Hook`. The seams other packages call (docs/internals.md) are importable from here too;
the runtime pieces load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .context import ToolContext
from .decorator import tool
from .discovery import discover_tools, parse_tools_md
from .hooks import Hook, discover_hooks
from .inheritance import resolve_tools

_LAZY: dict[str, str] = {
    "Toolbox": "prefect_folpipe.tools.runtime",
    "RUNNERS": "prefect_folpipe.tools.runtime",
    "register_runner": "prefect_folpipe.tools.runtime",
    "run_hook": "prefect_folpipe.tools.hooks",
    "redact": "prefect_folpipe.tools.redact",
    "redact_secrets": "prefect_folpipe.tools.redact",
    "resolve_path": "prefect_folpipe.tools.sandbox",
}

__all__ = [
    "RUNNERS",
    "Hook",
    "ToolContext",
    "Toolbox",
    "discover_hooks",
    "discover_tools",
    "parse_tools_md",
    "redact",
    "redact_secrets",
    "register_runner",
    "resolve_path",
    "resolve_tools",
    "run_hook",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prefect_folpipe.tools' has no attribute {name!r}")
    return getattr(import_module(module), name)
