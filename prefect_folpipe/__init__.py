"""prefect_folpipe: run agentic workflow folders as Prefect 3 flows.

Importing the package is cheap: the Prefect-bound parts (``folder_to_flow``, ``run_workflow``)
are imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import (
    Diagnostic,
    FolpipeError,
    ProviderError,
    Severity,
    WorkflowFailed,
    WorkflowValidationError,
)

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "folder_to_flow": "prefect_folpipe.compile",
    "run_workflow": "prefect_folpipe.compile",
    "flush_artifacts": "prefect_folpipe.compile",
    "RunResult": "prefect_folpipe.compile",
    "load_workflow": "prefect_folpipe.validate",
    "validate_workflow": "prefect_folpipe.validate",
    "tool": "prefect_folpipe.tools",
    "ToolContext": "prefect_folpipe.tools",
    "Hook": "prefect_folpipe.tools",
}

__all__ = [
    "Diagnostic",
    "FolpipeError",
    "Hook",
    "ProviderError",
    "RunResult",
    "Severity",
    "ToolContext",
    "WorkflowFailed",
    "WorkflowValidationError",
    "__version__",
    "flush_artifacts",
    "folder_to_flow",
    "load_workflow",
    "run_workflow",
    "tool",
    "validate_workflow",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prefect_folpipe' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
