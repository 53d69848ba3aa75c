"""Parallel and sequential groups, Prefect-free: the members run in waves
(a wave's members in parallel, waves in order) and their deltas merge in sibling order."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from ...workflow.tree import Task
from ..contextops import child_context, merge_delta
from ..failures import GroupFailed
from ._fanout import FailFast, gather_fail_fast
from ._outcome import (
    Executor,
    Outcome,
    Scope,
    absorb_failure,
    failure_of,
    restore_members,
    show_restored,
)


async def run_waves(
    group: Task,
    waves: Sequence[Sequence[Task]],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
    *,
    on_error: str | None = None,
) -> Outcome:
    """Run waves in order (members of a wave in parallel), merging in sibling order."""
    policy = on_error or group.on_error
    ctx = child_context(context)
    delta: dict[str, Any] = {}
    failures: list[GroupFailed] = []
    shown: list[tuple[Task, Outcome]] = []  # restored, not yet shown (at once, before a run)
    for wave_index, wave in enumerate(waves):
        restored = await restore_members(ex, wave, ctx, scope)
        shown += [(child, done) for child, done in zip(wave, restored, strict=True) if done]
        if None in restored:
            await show_restored(ex, group, scope, shown)
            shown = []
        results, fast = await _run_wave(group, wave, ctx, ex, scope, policy == "fail", restored)
        for child, result in zip(wave, results, strict=True):
            if result is None:
                continue
            merge_delta(ctx, result.delta)
            merge_delta(delta, result.delta)
            if result.failed and policy != "fail":
                absorb_failure(ctx, delta, child, result, scope)
                if policy == "continue":
                    failures.append(failure_of(child, result))
        failed_index = fast
        if failed_index is None and policy == "fail":
            failed_index = next((i for i, r in enumerate(results) if r and r.failed), None)
        if failed_index is not None:
            culprit = wave[failed_index]
            for later in [t for w in waves[wave_index + 1 :] for t in w]:
                ex.not_run(later, f"not run: '{culprit.path}' failed")
            return Outcome("failed", delta, failure_of(culprit, results[failed_index]))  # type: ignore[arg-type]
    await show_restored(ex, group, scope, shown)
    if failures:
        return Outcome("failed", delta, failures[0])
    return Outcome("completed", delta)


async def _run_wave(
    group: Task,
    members: Sequence[Task],
    ctx: dict[str, Any],
    ex: Executor,
    scope: Scope,
    fail_fast: bool,
    restored: Sequence[Outcome | None] = (),
) -> tuple[list[Outcome | None], int | None]:
    """Run ``members`` concurrently on ``ctx``; results and the fail-fast index. Members
    already ``restored`` from checkpoints keep that outcome and do not run.

    Nothing changes ``ctx`` during a wave (results merge after it) and no child writes to its
    input (a leaf works on its own copy, a branch on a child context), so the members share it.
    """
    results: list[Outcome | None] = list(restored) or [None] * len(members)
    todo = [(index, child) for index, child in enumerate(members) if results[index] is None]
    if not todo:
        return results, None
    if len(members) == 1:
        return [await ex.run_child(members[0], ctx, scope)], None
    workers = group.settings.parallel_workers
    limit = asyncio.Semaphore(workers) if workers else None

    async def one(index: int, child: Task) -> None:
        async with limit if limit is not None else contextlib.nullcontext():
            result = await ex.run_child(child, ctx, scope)
        results[index] = result
        if fail_fast and result.failed:
            raise FailFast(index)

    first = await gather_fail_fast([one(index, child) for index, child in todo])
    return results, first
