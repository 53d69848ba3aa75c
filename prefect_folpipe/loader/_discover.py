r"""Folder walk: task identity, children, ordering, names and paths.

* A folder is a task when it holds ``instructions.md``, ``task.yaml``, ``SKILL.md`` (front-matter
  = task.yaml fields, body = instructions) or ``subtasks/``. Under ``subtasks/`` other folders
  are ignored with a warning (FP113); hidden folders and ``__pycache__`` silently.
* Name: ``task.yaml: name``, else the folder name without a ``^\d+_`` prefix. Path: names from
  the root's child down joined by ``/`` (root ``""``). Sibling names must be unique (FP110),
  enabled or not.
* Order: ``(priority, folder name)``; priority is ``task.yaml: priority``, else the folder's
  numeric prefix, else 50. ``subtasks.order`` (task names or folder names) replaces that order:
  the children are exactly the listed ones, in that order; unlisted folders are left out with
  warning FP114. ``enabled: false`` children go to ``disabled_children`` (still loaded and
  validated).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, Severity
from ..workflow.config import TaskConfig
from ..workflow.names import escape_controls, has_controls
from ..workflow.tree import DEFAULT_PRIORITY
from ._files import INSTRUCTIONS, PREFIX, SKILL, TASK_YAML, FolderFiles
from ._hash import FolderDigest
from ._ordering import order_children
from ._yaml import SourceMap

SUBTASKS = "subtasks"
MARKERS = (INSTRUCTIONS, TASK_YAML, SUBTASKS, SKILL)
IGNORED_DIRS = frozenset({"__pycache__"})
Listing = tuple[frozenset[str], frozenset[str]]
"""A folder's names, and those of them that are files."""


@dataclass
class RawTask:
    """A task folder as read from disk, before the cascade and resolution."""

    folder: Path
    rel_dir: str
    entries: frozenset[str]
    config: TaskConfig
    source: SourceMap
    source_file: Path | None
    name: str
    priority: int
    path: str = ""
    instructions: str | None = None
    instructions_file: Path | None = None
    instructions_line: int = 1
    """Line of the instructions' first line in their file (SKILL.md bodies start later)."""
    children: list[RawTask] = field(default_factory=list)
    disabled: list[RawTask] = field(default_factory=list)
    files: frozenset[str] | None = None
    """The names in ``entries`` that are files (what the folder's listing said; no stat);
    ``None``: not known (looked up where asked)."""

    @property
    def has_subtasks_dir(self) -> bool:
        return SUBTASKS in self.entries


class Discovery:
    """Walks a workflow folder into RawTasks, collecting every diagnostic on the way."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.diagnostics: list[Diagnostic] = []
        self.files = FolderFiles(self.diagnostics)
        self.folder_digests: dict[tuple[str, str], FolderDigest] = {}
        """Task folders' content hashes, shared by the builds over this discovery."""
        self.root_cascade: Any = None
        """The builds' root ``Cascade`` (its merges are kept: the second build reuses them)."""
        self.own_parts: dict[int, Any] = {}
        """What the builds take from each raw task's own folder, by ``id`` (``loader``)."""
        self.listings: dict[str, list[os.DirEntry[str]]] = {}
        """Each task folder's entries as listed (the content hashes list no folder twice)."""
        self.task_hashes: dict[tuple[int, tuple[tuple[str, str, str], ...]], str] = {}
        """Content hashes by raw task ``id`` and its tools' identities: the second build's
        tools differ from the first's only in what importing them gave, not in what a hash
        covers."""

    @property
    def blobs(self) -> dict[str, bytes]:
        """Bytes of every file read, so content hashes need not read them again."""
        return self.files.blobs

    def error(
        self,
        code: str,
        message: str,
        file: str | None,
        line: int | None = None,
        task: str | None = None,
        hint: str | None = None,
        severity: Severity = Severity.ERROR,
    ) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, line, task, hint, severity))

    # --- one folder -----------------------------------------------------------------------

    def load_root(self) -> RawTask | None:
        if not self.root.is_dir():
            what = "does not exist" if not self.root.exists() else "is not a folder"
            self.error(
                "FP101",
                f"workflow path {str(self.root)!r} {what}",
                None,
                hint="pass the workflow's root folder",
            )
            return None
        entries, files = self._list(self.root)
        if not entries & set(MARKERS):
            self.error(
                "FP101",
                "the workflow root has no task marker (instructions.md, "
                "task.yaml, SKILL.md or subtasks/)",
                ".",
                hint="run `folpipe init PATH` or add an instructions.md",
            )
            return None
        task = self.load_folder(self.root, (entries, files), "", (self.root.resolve(),))
        self._set_paths(task, "")
        self._label_with_paths(task)
        return task

    def _label_with_paths(self, root: RawTask) -> None:
        """Diagnostics were labelled with folders while paths were unknown: use paths now."""
        paths: dict[str, str] = {}
        stack = [root]
        while stack:
            task = stack.pop()
            paths[task.rel_dir] = task.path
            stack += [*task.children, *task.disabled]
        self.diagnostics[:] = [
            replace(d, task=paths.get(d.task, d.task)) if d.task is not None else d
            for d in self.diagnostics
        ]

    def load_folder(
        self, folder: Path, listing: Listing, label: str, lineage: tuple[Path, ...]
    ) -> RawTask:
        """Read one task folder (``listing``: its names, and those that are files) and,
        recursively, its children."""
        entries, files = listing
        rel_dir = label
        config, source, source_file, instructions = self.files.read_task(folder, entries, label)
        name = self.files.name(config, folder, source, label)
        match = PREFIX.match(folder.name)
        default_priority = int(match.group(1)) if match else DEFAULT_PRIORITY
        task = RawTask(
            folder=folder,
            rel_dir=rel_dir,
            entries=entries,
            files=files,
            config=config,
            source=source,
            source_file=source_file,
            name=name,
            priority=config.priority if config.priority is not None else default_priority,
        )
        if instructions is not None:
            task.instructions, task.instructions_file, task.instructions_line = instructions
        if task.has_subtasks_dir or (config.subtasks and config.subtasks.order):
            self._load_children(task, lineage)
        return task

    def _list(self, folder: Path) -> Listing:
        """A task folder's names and files, its listing kept for the content hashes."""
        try:
            with os.scandir(folder) as it:
                found = self.listings[str(folder)] = list(it)
        except OSError:
            return frozenset(), frozenset()
        return _entries(found)

    # --- children ---------------------------------------------------------------------------

    def _load_children(self, parent: RawTask, lineage: tuple[Path, ...]) -> None:
        subtasks = parent.folder / SUBTASKS
        found: list[RawTask] = []
        prefix = f"{parent.rel_dir}/{SUBTASKS}" if parent.rel_dir else SUBTASKS
        for child_dir, is_link in _child_dirs(subtasks):
            rel = f"{prefix}/{child_dir.name}"
            if has_controls(child_dir.name):  # it would be printed, and named in Prefect
                self.error(
                    "FP123",
                    "a task folder's name holds control characters",
                    escape_controls(rel),
                    None,
                    parent.rel_dir,
                    "rename the folder: letters, digits, '-', '_' and spaces",
                )
                continue
            # only a symlink can make a folder contain itself: resolve just those
            real = child_dir.resolve() if is_link else lineage[-1] / child_dir.name
            if is_link and real in lineage:
                self.error(
                    "FP119",
                    "symlink loop: this folder contains itself",
                    rel,
                    hint="remove the symlink",
                )
                continue
            if is_link and lineage[0] != real and lineage[0] not in real.parents:
                self.error(
                    "FP109",
                    f"this task folder is a symlink to {str(real)!r}, outside the workflow: its "
                    "code (tools, hooks) runs as part of this workflow",
                    rel,
                    None,
                    parent.rel_dir,
                    "copy the folder into the workflow, or make sure you trust its target",
                    Severity.WARNING,
                )
            listing = self._list(child_dir)
            if not listing[0] & set(MARKERS):
                self.error(
                    "FP113",
                    "folder under subtasks/ has no task marker and is ignored",
                    rel,
                    None,
                    parent.rel_dir,
                    "add instructions.md or task.yaml to make it a task",
                    Severity.WARNING,
                )
                continue
            found.append(self.load_folder(child_dir, listing, rel, (*lineage, real)))
        ordered = order_children(parent, found, self.files.error)
        parent.children = [c for c in ordered if c.config.enabled]
        parent.disabled = [c for c in ordered if not c.config.enabled]

    def _set_paths(self, task: RawTask, path: str) -> None:
        task.path = path
        seen: dict[str, RawTask] = {}
        for child in [*task.children, *task.disabled]:
            if child.name in seen:
                other = seen[child.name]
                # point at the `name:` that causes the clash when one of the two has it
                file, line = _name_site(child)
                if line is None:
                    file, line = _name_site(other)
                    file, line = (file, line) if line is not None else _name_site(child)
                self.error(
                    "FP110",
                    f"two subtasks are named {child.name!r} ({other.rel_dir} and {child.rel_dir})",
                    file,
                    line,
                    task.rel_dir,
                    "sibling names must be unique: rename a folder or set `name:`",
                )
            seen.setdefault(child.name, child)
            self._set_paths(child, f"{path}/{child.name}" if path else child.name)


def _name_site(task: RawTask) -> tuple[str, int | None]:
    """Where a task's name comes from: its ``name:`` line, else its folder."""
    if task.source_file is not None and ("name",) in task.source.lines:
        return task.source.file, task.source.line(("name",))
    return task.rel_dir, None


def _entries(found: list[os.DirEntry[str]]) -> Listing:
    """The names in a folder's listing, and those of them that are files (from the
    listing's file types: no stat, except for a symlink)."""
    files = []
    for entry in found:
        try:
            if entry.is_file():
                files.append(entry.name)
        except OSError:
            continue
    return frozenset(e.name for e in found), frozenset(files)


def _child_dirs(subtasks: Path) -> list[tuple[Path, bool]]:
    """Folders under ``subtasks/`` (hidden ones and ``__pycache__`` skipped), with whether
    each is a symlink."""
    try:
        with os.scandir(subtasks) as it:
            return [
                (Path(e.path), e.is_symlink())
                for e in it
                if e.is_dir() and not e.name.startswith(".") and e.name not in IGNORED_DIRS
            ]
    except OSError:
        return []
