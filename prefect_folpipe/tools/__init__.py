"""Tools at run time: the toolbox a task's agent calls, one runner per tool kind, hooks.

Public API (re-exported by ``prefect_folpipe``): :func:`tool`, :class:`ToolContext` (both
defined in ``workflow/``, since the loader reads them too) and :class:`Hook`. The runtime
pieces load on first use.
"""

from __future__ import annotations

from typing import Any

from ..authoring import ToolContext, tool

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
    # each import names its module explicitly (``from . import redact`` would ask this
    # module for ``redact`` again while the submodule is being imported)
    if name in ("Hook", "run_hook"):
        from .hooks import Hook, run_hook

        return {"Hook": Hook, "run_hook": run_hook}[name]
    if name in ("RUNNERS", "Toolbox", "register_runner"):
        from .toolbox import RUNNERS, Toolbox, register_runner

        return {"RUNNERS": RUNNERS, "Toolbox": Toolbox, "register_runner": register_runner}[name]
    if name in ("redact", "redact_secrets"):
        from ..redaction import redact, redact_secrets

        return {"redact": redact, "redact_secrets": redact_secrets}[name]
    if name == "resolve_path":
        from ..authoring import resolve_path

        return resolve_path
    raise AttributeError(f"module 'prefect_folpipe.tools' has no attribute {name!r}")
