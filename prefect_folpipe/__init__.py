"""prefect_folpipe: run agentic workflow folders as Prefect 3 flows.

Importing the package is cheap: the Prefect-bound parts (``folder_to_flow``, ``run_workflow``)
are imported on first use.
"""

from __future__ import annotations

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
    if name in ("RunResult", "flush_artifacts", "folder_to_flow", "run_workflow"):
        from . import compile as home  # imports Prefect on first use
    elif name in ("load_workflow", "validate_workflow"):
        from . import validate as home  # type: ignore[no-redef]
    elif name in ("Hook", "ToolContext", "tool"):
        from . import tools as home  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module 'prefect_folpipe' has no attribute {name!r}")
    value = getattr(home, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
