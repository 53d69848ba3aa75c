"""Hook files checked without running them (the loader knows what a hook must define)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ..loader.hooks import check_hooks
from ._common import at


def check_hook_files(result: LoadResult) -> Iterator[Diagnostic]:
    """FP225-FP228 for every task's ``hooks/`` folder, with files relative to the root;
    FP226 also where a hook file shadows task.yaml's http hook of the same stage."""
    for task in result.all_tasks():
        for diagnostic in check_hooks(task.folder, owner=task.path):
            yield _relative(diagnostic, result.root_dir)
        for stage in ("pre_run", "post_run"):
            http = getattr(task.config.hooks, stage, None) if task.config.hooks else None
            hook = task.hooks.get(stage)
            if http is not None and hook is not http:
                yield at(
                    result,
                    task,
                    "FP226",
                    f"hooks.{stage} in task.yaml is not used: hooks/{Path(str(hook)).name} runs "
                    "for that stage",
                    ("hooks", stage),
                    "keep one hook per stage",
                    Severity.WARNING,
                )


def _relative(diagnostic: Diagnostic, root: Path) -> Diagnostic:
    if diagnostic.file is None:
        return diagnostic
    try:
        rel = Path(diagnostic.file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return diagnostic
    return dataclasses.replace(diagnostic, file=rel)
