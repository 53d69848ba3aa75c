"""Tools at run time: the toolbox a task's agent calls, one runner per tool kind, hooks.

Public API (re-exported by ``prefect_folpipe``): :func:`tool`, :class:`ToolContext` (both
defined in ``workflow/``, since the loader reads them too) and :class:`Hook`. The runtime
pieces load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..workflow.marker import tool
from ..workflow.toolcontext import ToolContext

_LAZY: dict[str, str] = {
    "Hook": "prefect_folpipe.tools.hooks",
    "Toolbox": "prefect_folpipe.tools.runtime",
    "RUNNERS": "prefect_folpipe.tools.runtime",
    "register_runner": "prefect_folpipe.tools.runtime",
    "run_hook": "prefect_folpipe.tools.hooks",
    "redact": "prefect_folpipe.tools.redact",
    "redact_secrets": "prefect_folpipe.tools.redact",
    "resolve_path": "prefect_folpipe.workflow.grants",
}

__all__ = [
    "RUNNERS",
    "Hook",
    "ToolContext",
    "Toolbox",
    "redact",
    "redact_secrets",
    "register_runner",
    "resolve_path",
    "run_hook",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prefect_folpipe.tools' has no attribute {name!r}")
    return getattr(import_module(module), name)
