"""Checkpoint scope: a scheduled workflow that reuses checkpoints across runs forever.

Deployment runs re-run every task unless the workflow opts in with ``settings.cache:
{across_runs: true}`` (see docs/running.md, "Checkpoints and resume"). Opting in on a
scheduled workflow without a ``ttl`` means every scheduled run replays the first run's
results while its inputs stay the same: a nightly report that never changes.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ._common import at


def check_checkpoint_scope(result: LoadResult) -> Iterator[Diagnostic]:
    """FP625 (warning): ``across_runs: true`` without a ``ttl`` in a scheduled workflow."""
    assert result.workflow is not None
    root = result.workflow.root
    if root.config.deploy is None or root.config.deploy.schedule is None:
        return
    for task in result.workflow.tasks():
        settings = task.settings
        declared = task.config.settings.cache
        says_so = declared is not None and not isinstance(declared, bool)
        if settings.cache_across_runs and settings.cache_expiration is None and says_so:
            yield at(
                result,
                task,
                "FP625",
                "checkpoints are reused across runs (`settings.cache.across_runs: true`) "
                "without a ttl, and the workflow is scheduled: every scheduled run replays "
                "the first run's results while its inputs stay the same",
                ("settings", "cache"),
                "add a ttl (`cache: {across_runs: true, ttl: 1d}`), or drop across_runs so "
                "scheduled runs re-run every task (their retries still reuse checkpoints)",
                Severity.WARNING,
            )
