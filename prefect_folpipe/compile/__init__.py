"""compile: build a run's Prefect objects from its plan, and run them.

Importing ``prefect_folpipe.compile`` does not import Prefect: the public names are
re-exported lazily from the modules that do (``api``, ``build``, ``report``, ``options``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "RunOptions",
    "RunResult",
    "arun_workflow",
    "flush_artifacts",
    "folder_to_flow",
    "run_root",
    "run_workflow",
]


def __getattr__(name: str) -> Any:
    if name in ("folder_to_flow", "run_workflow", "arun_workflow"):
        from . import api as home
    elif name == "RunResult":
        from . import report as home  # type: ignore[no-redef]
    elif name == "RunOptions":
        from . import options as home  # type: ignore[no-redef]
    elif name == "run_root":
        from . import build as home  # type: ignore[no-redef]
    elif name == "flush_artifacts":
        from . import report as home  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module 'prefect_folpipe.compile' has no attribute {name!r}")
    value = getattr(home, name)
    globals()[name] = value
    return value
