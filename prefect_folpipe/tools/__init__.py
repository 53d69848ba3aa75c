"""Tools at run time: the toolbox a task's agent calls, one runner per tool kind, hooks.

Public API (re-exported by ``prefect_folpipe``): :func:`tool`, :class:`ToolContext` (both
defined in ``workflow/``, since the loader reads them too) and :class:`Hook`. The runtime
pieces load on first use.
"""

from __future__ import annotations

from typing import Any

from ..workflow.marker import tool
from ..workflow.toolcontext import ToolContext

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
    if name in ("Hook", "run_hook"):
        from . import hooks as home
    elif name in ("RUNNERS", "Toolbox", "register_runner"):
        from . import runtime as home  # type: ignore[no-redef]
    elif name in ("redact", "redact_secrets"):
        # ``from . import redact`` would ask this very function for ``redact`` first
        from .redact import redact, redact_secrets

        return {"redact": redact, "redact_secrets": redact_secrets}[name]
    elif name == "resolve_path":
        from ..workflow import grants as home  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module 'prefect_folpipe.tools' has no attribute {name!r}")
    return getattr(home, name)
