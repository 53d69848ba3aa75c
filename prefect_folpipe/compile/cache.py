"""Checkpoint keys (Prefect-free): what makes a task's result reusable across runs.

Prefect's DEFAULT policy includes the run id (no resume across runs) and TASK_SOURCE hashes
one generic function for every folder, so the translator keys results on content instead:
task path + the folder's content hash (files, resolved tools, provider settings) + the input
context the task sees + loop iteration + phase + the provider override + a cache version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..workflow.context import checkpoint_inputs
from ..workflow.names import slug
from ..workflow.tree import Task
from .contextops import canonical_json

CACHE_VERSION = "folpipe-cache-1"


def task_identity(task: Task) -> str:
    """Hash of everything about the task itself (computed once per run)."""
    parts = [
        task.path,
        task.content_hash,
        task.system_prompt or "",
        task.instructions or "",
        task.config.model_dump_json(by_alias=True),
        canonical_json([tool.content_hash or tool.name for tool in task.tools]),
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def cache_key(
    task: Task,
    identity: str,
    context: Mapping[str, Any],
    *,
    iteration: tuple[int, ...] = (),
    phase: str = "single",
    salt: str = "",
) -> str:
    """The checkpoint key of one execution of ``task`` on ``context``."""
    digest = hashlib.sha256()
    for part in (
        CACHE_VERSION,
        identity,
        phase,
        canonical_json(list(iteration)),
        salt,
        canonical_json(checkpoint_inputs(task, context, phase)),
    ):
        digest.update(part.encode())
        digest.update(b"\x1f")
    return f"{slug(task.path or 'root')}-{digest.hexdigest()[:40]}"
