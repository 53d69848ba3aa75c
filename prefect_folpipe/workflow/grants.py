"""File access for Python tools: the allowed roots of spec §14.2.

A path a tool asks for is resolved against the task folder, symlinks and ``..`` included, and
must land inside one of:

* ``<task>/input/``, ``<task>/output/``, ``<task>/subtasks/`` (directories, any depth);
* ``<task>/instructions.md``, ``<task>/SKILL.md`` (exactly these files);
* the target of a directory symlink placed directly in the task folder (an explicit grant by
  the workflow author: ``credentials -> /vault/app``).

Everything else (``.env``, ``task.yaml``, ``tools.md``, ``../``, absolute paths elsewhere, a
symlink inside ``input/`` pointing out of the grant) raises :class:`SandboxViolation`.
Resolution uses the real path, so a chain of symlinks is followed to its end before checking.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import SandboxViolation

ALLOWED_DIRS = ("input", "output", "subtasks")
ALLOWED_FILES = ("instructions.md", "SKILL.md")


@dataclass(frozen=True)
class AllowedRoots:
    """The real (symlink-free) paths a task may touch."""

    directories: tuple[Path, ...]
    files: tuple[Path, ...]

    def allows(self, real: Path) -> bool:
        if real in self.files:
            return True
        return any(real == root or root in real.parents for root in self.directories)


def allowed_roots(task_dir: str | os.PathLike[str]) -> AllowedRoots:
    """The allowed roots of a task folder, resolved to real paths."""
    base = Path(os.path.realpath(task_dir))
    directories = [Path(os.path.realpath(base / name)) for name in ALLOWED_DIRS]
    files = [base / name for name in ALLOWED_FILES]
    directories.extend(_symlink_grants(Path(task_dir)))
    return AllowedRoots(tuple(dict.fromkeys(directories)), tuple(files))


def _symlink_grants(task_dir: Path) -> list[Path]:
    """Targets of directory symlinks directly inside the task folder."""
    grants: list[Path] = []
    try:
        entries = list(os.scandir(task_dir))
    except OSError:
        return grants
    for entry in entries:
        if entry.is_symlink() and entry.is_dir(follow_symlinks=True):
            grants.append(Path(os.path.realpath(entry.path)))
    return grants


def resolve_path(task_dir: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """Resolve ``path`` (relative to the task folder, or absolute) inside the allowed roots.

    Returns the real path; raises SandboxViolation when it falls outside every allowed root.
    """
    raw = os.fspath(path)
    if not raw or "\x00" in raw:
        raise SandboxViolation(f"invalid path {raw!r}")
    candidate = Path(raw) if os.path.isabs(raw) else Path(task_dir) / raw
    try:
        real = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        raise SandboxViolation(f"cannot resolve path {raw!r}: {exc}") from exc
    if not allowed_roots(task_dir).allows(real):
        raise SandboxViolation(
            f"access to {raw!r} is outside this task's allowed paths "
            "(input/, output/, subtasks/, instructions.md, SKILL.md, "
            "or a directory symlink in the task folder)"
        )
    return real
