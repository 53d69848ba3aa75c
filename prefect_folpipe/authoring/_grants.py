"""File access for Python tools: the allowed roots (docs/tools.md, "File access").

A path a tool asks for is resolved against the task folder, symlinks and ``..`` included, and
must land inside one of:

* ``<task>/input/``, ``<task>/output/`` (directories, any depth);
* ``<task>/instructions.md``, ``<task>/SKILL.md`` (exactly these files);
* ``<task>/subtasks/``: the folders themselves, and inside each child what that child may
  touch (its ``input/``, ``output/``, ``instructions.md``, ``SKILL.md``, its own
  ``subtasks/`` by the same rule) — never a child's ``.env``, ``task.yaml`` or ``tools.md``;
* the target of a directory symlink placed directly in the task folder (an explicit grant by
  the workflow author: ``credentials -> /vault/app``).

Everything else (``.env``, ``task.yaml``, ``tools.md``, ``../``, absolute paths elsewhere, a
symlink inside ``input/`` pointing out of the grant) raises :class:`SandboxViolation`.
Resolution uses the real path, so a chain of symlinks is followed to its end before checking.

The grants are computed **once, when the task starts** (:class:`AllowedRoots`, held by the
task's ``ToolContext``): a directory symlink a tool creates during the run (``ln -s /
rootlink``) grants nothing. A regular file with more than one hard link is refused, since the
other link may be anywhere (``ln /etc/passwd input/x``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import SandboxViolation

ALLOWED_DIRS = ("input", "output")
ALLOWED_FILES = ("instructions.md", "SKILL.md")
CHILDREN = "subtasks"
MAX_CHILD_DEPTH = 64


@dataclass(frozen=True)
class AllowedRoots:
    """The real (symlink-free) paths a task may touch, fixed when the task starts."""

    directories: tuple[Path, ...]
    files: tuple[Path, ...]
    children: Path | None = None
    """The real path of the task's ``subtasks/`` folder."""
    depth: int = 0
    """How many ``subtasks/`` levels below the task that started (for the children's rules)."""

    def allows(self, real: Path) -> bool:
        if real in self.files:
            return True
        if any(real == root or root in real.parents for root in self.directories):
            return True
        return self.children is not None and _child_allows(self.children, real, self.depth)


def _child_allows(children: Path, real: Path, depth: int) -> bool:
    """``subtasks/`` and each child folder may be listed; inside a child, what the child may
    touch (without its symlink grants: those are the child's, not its parent's)."""
    if real != children and children not in real.parents:
        return False
    parts = real.relative_to(children).parts
    if len(parts) <= 1:
        return True
    if depth >= MAX_CHILD_DEPTH:
        return False
    return _static_roots(children / parts[0], depth + 1).allows(real)


def _static_roots(task_dir: Path, depth: int = 0) -> AllowedRoots:
    """What a task folder allows without its symlink grants."""
    directories = tuple(Path(os.path.realpath(task_dir / name)) for name in ALLOWED_DIRS)
    files = tuple(task_dir / name for name in ALLOWED_FILES)
    children = Path(os.path.realpath(task_dir / CHILDREN))
    return AllowedRoots(directories, files, children, depth)


def allowed_roots(task_dir: str | os.PathLike[str]) -> AllowedRoots:
    """The allowed roots of a task folder as they are now, resolved to real paths."""
    base = Path(os.path.realpath(task_dir))
    static = _static_roots(base)
    grants = _symlink_grants(Path(task_dir))
    directories = tuple(dict.fromkeys([*static.directories, *grants]))
    return AllowedRoots(directories, static.files, static.children)


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


def resolve_path(
    task_dir: str | os.PathLike[str],
    path: str | os.PathLike[str],
    roots: AllowedRoots | None = None,
) -> Path:
    """Resolve ``path`` (relative to the task folder, or absolute) inside the allowed roots
    (``roots``: those computed when the task started; default: computed now).

    Returns the real path; raises SandboxViolation when it falls outside every allowed root,
    or names a file that has other hard links.
    """
    raw = os.fspath(path)
    if not raw or "\x00" in raw:
        raise SandboxViolation(f"invalid path {raw!r}")
    candidate = Path(raw) if os.path.isabs(raw) else Path(task_dir) / raw
    try:
        real = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        raise SandboxViolation(f"cannot resolve path {raw!r}: {exc}") from exc
    if not (roots or allowed_roots(task_dir)).allows(real):
        raise SandboxViolation(
            f"access to {raw!r} is outside this task's allowed paths "
            "(input/, output/, instructions.md, SKILL.md, what its subtasks may read, "
            "or a directory symlink in the task folder when the task started)"
        )
    _refuse_hard_links(real, raw)
    return real


def _refuse_hard_links(real: Path, raw: str) -> None:
    try:
        info = os.stat(real)
    except OSError:
        return  # does not exist (yet): a tool may create it
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise SandboxViolation(
            f"{raw!r} is a file with {info.st_nlink} hard links: another link may be outside "
            "the task's allowed paths"
        )
