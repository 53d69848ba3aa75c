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

from .._process.memo import IdentityMemo
from ..workflow.config import TaskConfig
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
        config_json(task.config),
        canonical_json([tool.content_hash or tool.name for tool in task.tools]),
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def config_json(config: TaskConfig) -> str:
    """A task.yaml's JSON, made once per config object: configs are frozen, and a reload of
    an unchanged file returns the same object (``loader._files``), so a re-run does not
    serialise every task's config again."""
    return _CONFIG_JSON(config)


_CONFIG_JSON = IdentityMemo(lambda config: config.model_dump_json(by_alias=True), limit=8192)


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
