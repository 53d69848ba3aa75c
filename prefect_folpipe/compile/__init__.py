"""compile: plan a loaded workflow (``plan``, Prefect-free), then build and run it on Prefect.

``plan``, ``views`` and the other pure modules never import Prefect; ``build``, ``api``,
``leaf``, ``tasks``, ``executor`` and ``dask`` do, so the public names are re-exported lazily
and ``import prefect_folpipe.compile.plan`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY: dict[str, str] = {
    "folder_to_flow": "prefect_folpipe.compile.api",
    "run_workflow": "prefect_folpipe.compile.api",
    "arun_workflow": "prefect_folpipe.compile.api",
    "RunResult": "prefect_folpipe.compile.report",
    "RunOptions": "prefect_folpipe.compile.options",
    "run_root": "prefect_folpipe.compile.build",
    "flush_artifacts": "prefect_folpipe.compile.background",
}

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
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prefect_folpipe.compile' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
