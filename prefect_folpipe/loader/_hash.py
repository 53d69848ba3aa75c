"""Content hashes: what a task's checkpoints key on.

A task's hash covers its path, its own files (task.yaml, instructions.md, SKILL.md, tools.md,
everything under tools/ and hooks/ except hidden files and ``__pycache__``), the snippets its
instructions include, its resolved tools' hashes and its resolved provider settings. It does
not cover ``subtasks/``, ``.folpipe/`` or anything of a sibling, so editing one task never
invalidates another task's checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ..workflow.tree import ResolvedProvider, ToolSpec

OWN_FILES = ("task.yaml", "instructions.md", "SKILL.md", "tools.md")
OWN_DIRS = ("tools", "hooks")


def task_hash(
    path: str,
    folder: Path,
    entries: frozenset[str],
    snippets: Iterable[Path],
    tools: Iterable[ToolSpec],
    provider: ResolvedProvider | None,
    blobs: Mapping[Path, bytes] | None = None,
) -> str:
    """sha256 of everything that decides what this task does (see the module docstring)."""
    digest = hashlib.sha256()
    digest.update(f"path\0{path}\0".encode())
    blobs = blobs or {}
    for rel, file in _own_files(folder, entries):
        _add_file(digest, rel, file, blobs)
    for snippet in sorted(set(snippets)):
        _add_file(digest, f"snippet:{snippet.name}", snippet, blobs)
    for tool in sorted(tools, key=lambda t: (t.name, t.owner)):
        digest.update(f"tool\0{tool.name}\0{tool.owner}\0{tool.content_hash}\0".encode())
    if provider is not None:
        digest.update(provider_blob(provider))
    return digest.hexdigest()


def file_digests(folder: Path) -> dict[str, str]:
    """sha256 of each of the task's own files that its hash covers, by relative path (what
    ``folpipe plan`` compares to say which file changed)."""
    try:
        entries = frozenset(os.listdir(folder))
    except OSError:
        return {}
    out = {}
    for rel, file in _own_files(folder, entries):
        try:
            out[rel] = hashlib.sha256(file.read_bytes()).hexdigest()
        except OSError:
            out[rel] = "unreadable"
    return out


_PROVIDER_BLOBS: dict[int, tuple[ResolvedProvider, bytes]] = {}


def provider_blob(provider: ResolvedProvider) -> bytes:
    """Canonical bytes of a resolved provider's settings (memoised: tasks share providers)."""
    cached = _PROVIDER_BLOBS.get(id(provider))
    if cached is not None and cached[0] is provider:
        return cached[1]
    settings = provider.config.model_dump(mode="json", exclude_none=True)
    text = json.dumps([provider.name, provider.type, settings], sort_keys=True, default=str)
    blob = f"provider\0{text}\0".encode()
    if len(_PROVIDER_BLOBS) > 1024:
        _PROVIDER_BLOBS.clear()
    _PROVIDER_BLOBS[id(provider)] = (provider, blob)
    return blob


def _own_files(folder: Path, entries: frozenset[str]) -> Iterator[tuple[str, Path]]:
    for name in OWN_FILES:
        if name in entries:
            yield name, folder / name
    for name in OWN_DIRS:
        if name in entries:
            yield from _tree(folder / name, name)


def _tree(folder: Path, rel: str) -> Iterator[tuple[str, Path]]:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_dir():
            yield from _tree(Path(entry.path), f"{rel}/{entry.name}")
        elif entry.is_file():
            yield f"{rel}/{entry.name}", Path(entry.path)


def _add_file(digest: hashlib._Hash, rel: str, file: Path, blobs: Mapping[Path, bytes]) -> None:
    data = blobs.get(file)
    if data is None:
        try:
            data = file.read_bytes()
        except OSError:
            data = b"\0unreadable"
    digest.update(f"file\0{rel}\0{len(data)}\0".encode())
    digest.update(data)
