"""Content hashes: what a task's checkpoints key on.

A task's hash covers its path and **every file of its folder** at any depth — task.yaml,
instructions.md, SKILL.md, tools.md, tools/, hooks/, input/, data files — by relative path and
content, except:

* ``subtasks/`` (each child has its own hash), and at the workflow root ``shared/`` (covered
  through the snippets and tools a task uses);
* ``output/`` (what the task itself writes), ``__pycache__``, ``node_modules``, ``*.pyc``;
* hidden files and folders (``.env``, ``.folpipe/``, ``.git``, editor swap files, ``.venv``):
  they hold state, caches and secrets, not the task's inputs;
* a directory symlink is hashed as its target's path, not followed (a grant such as
  ``data -> /vault/big`` is not read in full at every load); a file symlink by its content;
* a file larger than :data:`LARGE_FILE` bytes is hashed by size and modification time.

It also covers the snippets its instructions include, its resolved tools' hashes and its
resolved provider settings. Nothing of a sibling counts, so editing one task never
invalidates another task's checkpoint. (The provider's *answers* — a scripted replies file,
a replay cassette — are keyed at run time through the provider's identity:
``providers.registry.ProviderPool.checkpoint_salt``.)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._process.files import read_regular
from .._process.memo import IdentityMemo
from ..workflow.tree import ResolvedProvider, ToolSpec

SKIPPED_DIRS = frozenset({"subtasks", "output", "__pycache__", "node_modules"})
"""Folders of a task that its hash never covers (at any depth)."""
ROOT_ONLY_SKIPPED = frozenset({"shared"})
"""Folders skipped in the workflow root's folder only."""
LARGE_FILE = 64 * 1024 * 1024
"""Files above this size are hashed by size and modification time, not content."""
FolderDigest = tuple[Any, dict[str, str]]
"""The hash state after a task's path and every file of its folder, and each file's digest."""


def task_hash(
    path: str,
    folder: Path,
    entries: frozenset[str],
    snippets: Iterable[Path],
    tools: Iterable[ToolSpec],
    provider: ResolvedProvider | None,
    blobs: Mapping[str, bytes] | None = None,
    folders: dict[tuple[str, str], FolderDigest] | None = None,
    listing: Sequence[os.DirEntry[str]] | None = None,
) -> str:
    """sha256 of everything that decides what this task does (see the module docstring).
    ``folders``: the digests of task folders hashed before in this load, by (path, folder)
    (a run's load builds the tree twice over the same bytes: before and after importing);
    ``listing``: the folder's entries as this load listed them (see :func:`folder_digest`)."""
    digest = folder_digest(path, folder, blobs, folders, listing)[0].copy()
    blobs = blobs or {}
    for snippet in sorted(set(snippets)):
        _add_file(digest, f"snippet:{snippet.name}", str(snippet), blobs)
    for tool in sorted(tools, key=lambda t: (t.name, t.owner)):
        digest.update(f"tool\0{tool.name}\0{tool.owner}\0{tool.content_hash}\0".encode())
    if provider is not None:
        digest.update(provider_blob(provider))
    return digest.hexdigest()


def folder_digest(
    path: str,
    folder: Path,
    blobs: Mapping[str, bytes] | None = None,
    folders: dict[tuple[str, str], FolderDigest] | None = None,
    listing: Sequence[os.DirEntry[str]] | None = None,
) -> FolderDigest:
    """The task's folder hashed from one read of each file: the hash state its ``task_hash``
    goes on from, and :func:`file_digests` of the same bytes. ``folders`` remembers it by
    (path, folder) for the rest of one load; ``listing``, the folder's entries as the load
    listed them, saves listing it again (its subfolders are listed here)."""
    key = (path, str(folder))
    known = folders.get(key) if folders is not None else None
    if known is None:
        known = _folder_digest(path, folder, blobs or {}, root=not path, listing=listing)
        if folders is not None:
            folders[key] = known
    return known


def _folder_digest(
    path: str,
    folder: Path,
    blobs: Mapping[str, bytes],
    *,
    root: bool,
    listing: Sequence[os.DirEntry[str]] | None = None,
) -> FolderDigest:
    digest, files = hashlib.sha256(), {}
    digest.update(f"path\0{path}\0".encode())
    skipped = SKIPPED_DIRS | ROOT_ONLY_SKIPPED if root else SKIPPED_DIRS
    for rel, link, file in _tree(str(folder), "", skipped, listing):
        if link:  # a directory symlink: its target, not its content
            digest.update(f"link\0{rel}\0{file}\0".encode())
            files[rel] = f"link:{file}"
        else:
            data = _add_file(digest, rel, file, blobs)
            files[rel] = hashlib.sha256(data).hexdigest()
    return digest, files


def file_digests(folder: Path, *, root: bool = False) -> dict[str, str]:
    """sha256 of each of the task's own files that its hash covers, by relative path (what
    ``folpipe plan`` compares to say which file changed); a directory symlink by its target.
    Read now: a loaded task carries those of the bytes its hash covered
    (``Task.file_digests``)."""
    return _folder_digest("", folder, {}, root=root)[1]


def provider_blob(provider: ResolvedProvider) -> bytes:
    """Canonical bytes of a resolved provider's settings (memoised: tasks share providers)."""
    return _PROVIDER_BLOBS(provider)


def _provider_blob(provider: ResolvedProvider) -> bytes:
    settings = provider.config.model_dump(mode="json", exclude_none=True)
    text = json.dumps([provider.name, provider.type, settings], sort_keys=True, default=str)
    return f"provider\0{text}\0".encode()


_PROVIDER_BLOBS = IdentityMemo(_provider_blob, limit=1024)


def _tree(
    folder: str,
    rel: str,
    skipped: frozenset[str],
    listing: Sequence[os.DirEntry[str]] | None = None,
) -> Iterator[tuple[str, bool, str]]:
    """``(relative path, False, file)`` for every file below ``folder`` in name order;
    ``(relative path, True, target)`` for a directory symlink (paths as strings: no ``Path``
    objects in this loop, which runs once per file of the workflow). ``listing``:
    ``folder``'s entries, listed already."""
    if listing is None:
        try:
            with os.scandir(folder) as it:
                listing = list(it)
        except OSError:
            return
    entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        name = entry.name
        if name.startswith(".") or name.endswith(".pyc"):
            continue
        where = f"{rel}/{name}" if rel else name
        try:
            is_dir = entry.is_dir()
            if is_dir and entry.is_symlink():
                yield where, True, os.readlink(entry.path)
            elif is_dir:
                if name not in skipped:
                    yield from _tree(entry.path, where, SKIPPED_DIRS)
            elif entry.is_file():
                yield where, False, entry.path
        except OSError:
            continue


def _add_file(digest: hashlib._Hash, rel: str, file: str, blobs: Mapping[str, bytes]) -> bytes:
    """Hash one file into ``digest``; returns the bytes hashed."""
    data = blobs.get(file)
    if data is None:
        data = _read(file)
    digest.update(f"file\0{rel}\0{len(data)}\0".encode())
    digest.update(data)
    return data


def _read(file: str) -> bytes:
    try:
        stat = os.stat(file)
        if stat.st_size > LARGE_FILE:
            return f"\0large\0{stat.st_size}\0{stat.st_mtime_ns}".encode()
        return read_regular(file)
    except OSError:
        return b"\0unreadable"
