"""Checkpoint manifests (Prefect-free): what each checkpoint's key covered, part by part.

When a pass finishes (not from a checkpoint), the run writes ``<task>-<phase>[-<iteration>].json``
into ``manifests/`` beside the results folder (``<workflow>/.folpipe/manifests/`` by default):
the key, a hash of each part the key covers (each own file, the instructions as sent, the
task's config, each tool, the provider settings and override, each input key), and the pass's
output (``delta``). ``folpipe plan`` compares the parts of the key a run would use now with the
last manifest, to say *why* a task would not come from its checkpoint ("instructions.md
changed", "input 'topic' changed"), and reads the outputs of tasks that would come from one
(and so does ``--from``, to find the tasks it can restore).

A manifest is signed like the result store's entries (the run hands in ``seal`` and
``unseal``: ``compile.storekey``, its key and HMAC), bound to the pass it describes (its file
name: task, phase, iteration), with the checkpoint key inside the signed part. One that fails
the check (edited, copied from another pass, unsigned: written by hand or by an older
folpipe) is treated as missing, with one FP540 warning naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._process.stored import DamagedEntry, read_stored_file, warn_damaged
from ..loader import file_digests
from ..workflow.context import checkpoint_inputs
from ..workflow.names import slug
from ..workflow.tree import Task
from ._keys import CACHE_VERSION, config_json
from .contextops import canonical_json

LOG = logging.getLogger("prefect_folpipe.plan")
KIND = "manifest"
FORGED = "FP540"
THEN = "treated as missing"
NOT_AN_OBJECT = DamagedEntry("it is not a JSON object")
Seal = Callable[[str, str, bytes], bytes]
"""``(kind, binding, data) -> data``: signs (``seal``) or checks and strips the tag
(``unseal``, raising ``ValueError`` when it fails)."""
_WARNED: set[tuple[str, int]] = set()


def manifest_file(folder: Path, path: str, phase: str, iteration: Sequence[int] = ()) -> Path:
    """Where the manifest of one pass of ``path`` lives in the manifests ``folder``."""
    suffix = "-" + ".".join(map(str, iteration)) if iteration else ""
    return folder / f"{slug(path or 'root', limit=60)}-{phase}{suffix}.json"


def key_parts(task: Task, context: Mapping[str, Any], *, phase: str, salt: str) -> dict[str, Any]:
    """A hash of every part a checkpoint key of ``task`` covers, by part."""
    provider = task.provider.config.model_dump(mode="json") if task.provider else None
    return {
        "version": CACHE_VERSION,
        "files": task.file_digests or file_digests(task.folder, root=not task.path),
        "instructions": _digest(task.system_prompt or task.instructions or ""),
        "config": _digest(config_json(task.config)),
        "tools": {tool.name: tool.content_hash or tool.name for tool in task.tools},
        "provider": _digest(canonical_json(provider)),
        "override": salt,
        "inputs": {
            key: _input_digest(value)
            for key, value in checkpoint_inputs(task, context, phase).items()
        },
    }


SCALARS = (str, int, float, bool, type(None))


def _input_digest(value: Any) -> str:
    """The digest of one input's canonical JSON; a scalar's is remembered (a chain's later
    tasks read every earlier answer again: without it, hashing inputs grows with the square
    of the chain's length)."""
    if type(value) in SCALARS and (type(value) is not str or len(value) <= 4096):
        return _scalar_digest(type(value), value)  # a long text is not kept alive for it
    return _digest(canonical_json(value))


@lru_cache(maxsize=4096)
def _scalar_digest(_kind: type, value: Any) -> str:
    """Keyed by type too: ``True == 1`` and ``1 == 1.0``, but their JSON differs."""
    return _digest(canonical_json(value))


def write_manifest(
    folder: Path,
    task: Task,
    *,
    phase: str,
    iteration: Sequence[int],
    key: str,
    parts: Mapping[str, Any],
    delta: Mapping[str, Any],
    seal: Seal | None = None,
) -> None:
    """Record a finished pass, signed with ``seal`` (best effort: a manifest that cannot be
    written is skipped)."""
    file = manifest_file(folder, task.path, phase, iteration)
    data = {"path": task.path, "phase": phase, "iteration": list(iteration), "key": key}
    tmp = file.with_suffix(f".{os.getpid()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({**data, "parts": parts, "delta": delta}, default=str).encode()
        tmp.write_bytes(seal(KIND, file.name, text) if seal is not None else text)
        os.replace(tmp, file)
    except Exception:  # best effort: no room, no store key (the run says so), odd data
        with contextlib.suppress(OSError):  # a full disk leaves no partial file behind
            tmp.unlink()


def read_manifest(
    folder: Path,
    path: str,
    phase: str,
    iteration: Sequence[int] = (),
    *,
    unseal: Seal | None = None,
) -> dict[str, Any] | None:
    """The last manifest of a pass, or ``None`` (missing; damaged: FP527; failing
    ``unseal``'s check: FP540; each warned once per file; without ``unseal`` it is not
    checked)."""
    file = manifest_file(folder, path, phase, iteration)
    try:
        data = read_stored_file(file)
    except OSError:  # none: the pass never ran here
        return None
    except DamagedEntry as exc:  # only costs plan's explanation (and --from its shortcut)
        _warn_damaged(file, exc)
        return None
    if not isinstance(data, dict):
        _warn_damaged(file, NOT_AN_OBJECT)
        return None
    if unseal is None:
        return data
    try:
        return json.loads(unseal(KIND, file.name, json.dumps(data).encode()))
    except ValueError as exc:
        _warn_forged(file, exc)
        return None


def _warn_forged(file: Path, exc: ValueError) -> None:
    _warn_once(
        file,
        lambda: LOG.warning(
            "[%s] ignoring checkpoint manifest %s: %s; %s", FORGED, file, exc, THEN
        ),
    )


def _warn_damaged(file: Path, exc: DamagedEntry) -> None:
    _warn_once(file, lambda: warn_damaged(LOG, f"checkpoint manifest {file}", exc, THEN))


def _warn_once(file: Path, warn: Callable[[], None]) -> None:
    """``warn`` about ``file`` once per version of it (its modification time)."""
    try:
        mark = (str(file), file.stat().st_mtime_ns)
    except OSError:
        mark = (str(file), 0)
    if mark not in _WARNED:
        _WARNED.add(mark)
        warn()


def what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The parts of a key that differ, in words (empty when none does)."""
    reasons: list[str] = []
    if old.get("version") != new.get("version"):
        reasons.append("the checkpoint format changed")
    reasons += _mapping_changes(old.get("files") or {}, new.get("files") or {}, "{}")
    if old.get("instructions") != new.get("instructions") and not any(
        r.startswith(("instructions.md", "SKILL.md")) for r in reasons
    ):
        reasons.append("the instructions as sent changed (an included snippet?)")
    if old.get("config") != new.get("config") and not any(
        r.startswith(("task.yaml", "SKILL.md")) for r in reasons
    ):
        reasons.append("the task's config changed")
    reasons += _mapping_changes(old.get("tools") or {}, new.get("tools") or {}, "tool '{}'")
    if old.get("provider") != new.get("provider"):
        reasons.append("the provider settings changed")
    if old.get("override") != new.get("override"):
        reasons.append(f"the provider changed ({old.get('override')} -> {new.get('override')})")
    reasons += _mapping_changes(old.get("inputs") or {}, new.get("inputs") or {}, "input '{}'")
    return reasons


def _mapping_changes(old: Mapping[str, Any], new: Mapping[str, Any], label: str) -> list[str]:
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            out.append(f"{label.format(name)} added")
        elif name not in new:
            out.append(f"{label.format(name)} removed")
        elif old[name] != new[name]:
            out.append(f"{label.format(name)} changed")
    return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
