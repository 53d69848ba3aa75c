"""Hook files checked without running them (the loader knows what a hook must define)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

from ..errors import Diagnostic
from ..loader import LoadResult
from ..loader.hooks import check_hooks


def check_hook_files(result: LoadResult) -> Iterator[Diagnostic]:
    """FP225-FP228 for every task's ``hooks/`` folder, with files relative to the root."""
    for task in result.all_tasks():
        for diagnostic in check_hooks(task.folder, owner=task.path):
            yield _relative(diagnostic, result.root_dir)


def _relative(diagnostic: Diagnostic, root: Path) -> Diagnostic:
    if diagnostic.file is None:
        return diagnostic
    try:
        rel = Path(diagnostic.file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return diagnostic
    return dataclasses.replace(diagnostic, file=rel)
