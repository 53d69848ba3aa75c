"""Task hooks (ARCHITECTURE §3 "Hooks"): ``hooks/pre_run`` and ``hooks/post_run``.

Discovery is here; running them comes below ``discover_hooks``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STAGES = ("pre_run", "post_run")
SUFFIXES = (".py", ".sh")


class Hook:
    """Base class for class-style hooks: subclass it and define ``run(self, ctx, task)``.

    ``run`` may be sync or ``async``; a returned mapping is merged into ``ctx.context``.
    """

    def run(self, ctx: Any, task: Any) -> Any:
        raise NotImplementedError("a Hook subclass must define run(self, ctx, task)")


def discover_hooks(task_dir: str | Path) -> dict[str, Path]:
    """``{"pre_run": path, "post_run": path}`` for the hooks present (``.py`` wins over ``.sh``)."""
    folder = Path(task_dir) / "hooks"
    found: dict[str, Path] = {}
    if not folder.is_dir():
        return found
    for stage in STAGES:
        for suffix in SUFFIXES:
            candidate = folder / f"{stage}{suffix}"
            if candidate.is_file():
                found[stage] = candidate.absolute()
                break
    return found
