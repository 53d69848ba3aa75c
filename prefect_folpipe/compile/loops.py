"""Loop groups (``until`` / ``max_iterations``, spec §2.7), Prefect-free: the members' waves
run once an iteration until the condition holds, each iteration within its timeout."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import Any

from ..expressions import Condition, compile_condition
from ..workflow.context import ERRORS_KEY
from ..workflow.tree import Task
from .contextops import child_context, error_record, merge_delta
from .evaluation import evaluate_condition
from .failures import IterationTimeout, LoopExhausted, LoopTimeout
from .outcome import Executor, Outcome, Scope
from .plan import LoopPlan
from .waves import run_waves


async def run_loop(
    group: Task,
    loop: LoopPlan,
    waves: Sequence[Sequence[Task]],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
) -> Outcome:
    """Iterate the waves (one child each) until ``until`` holds or ``max_iterations``."""
    progress = [0]
    try:
        async with asyncio.timeout(loop.timeout):
            return await _iterate(group, loop, waves, context, ex, scope, progress)
    except TimeoutError:
        message = f"loop '{_where(group)}' exceeded its settings.timeout of {loop.timeout}s"
        return Outcome("failed", {}, LoopTimeout(message), iterations=progress[0])


def _where(group: Task) -> str:
    return group.path or group.name


async def _iterate(
    group: Task,
    loop: LoopPlan,
    waves: Sequence[Sequence[Task]],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
    progress: list[int],
) -> Outcome:
    until = compile_condition(loop.until) if loop.until is not None else None
    maximum = loop.max_iterations or 1
    ctx = child_context(context)
    delta: dict[str, Any] = {}
    inner_policy = "ignore" if group.on_error == "ignore" else "fail"
    for number in range(1, maximum + 1):
        progress[0] = number
        ex.iteration_started(group, number)
        snapshot = (copy.deepcopy(ctx), copy.deepcopy(delta))
        inner = scope.enter(number)
        result, met = await _one_iteration(group, loop, waves, ctx, ex, inner, inner_policy, until)
        if result.status == "failed":
            if group.on_error == "fail":
                return Outcome("failed", delta, result.error, iterations=number)
            ctx, delta = snapshot
            failed_path = getattr(result.error, "task_path", "") or group.path
            name = failed_path.rsplit("/", 1)[-1] if failed_path else group.name
            entry = error_record(name, failed_path, result.error or "failed", number)
            # the iteration's outputs roll back; what failed inside it stays on record
            errors = [*result.delta.get(ERRORS_KEY, []), entry]
            merge_delta(ctx, {ERRORS_KEY: errors})
            merge_delta(delta, {ERRORS_KEY: errors})
            continue
        merge_delta(ctx, result.delta)
        merge_delta(delta, result.delta)
        if met:
            return Outcome("completed", delta, iterations=number)
    if until is None:
        return Outcome("completed", delta, iterations=maximum)
    message = f"loop '{_where(group)}' reached max_iterations={maximum} without meeting 'until'"
    if loop.on_max_iterations == "succeed_with_last":
        ex.warn(f"{message}; continuing with the last iteration's context")
        return Outcome("completed", delta, iterations=maximum)
    return Outcome("failed", delta, LoopExhausted(message), iterations=maximum)


async def _one_iteration(
    group: Task,
    loop: LoopPlan,
    waves: Sequence[Sequence[Task]],
    ctx: dict[str, Any],
    ex: Executor,
    scope: Scope,
    policy: str,
    until: Condition | None,
) -> tuple[Outcome, bool]:
    """One iteration and its ``until`` check, both within ``iteration_timeout``: the outcome,
    and whether ``until`` holds on the context the iteration leaves."""
    limit = loop.iteration_timeout
    try:
        async with asyncio.timeout(limit):
            result = await run_waves(group, waves, ctx, ex, scope, on_error=policy)
            if result.status == "failed" or until is None:
                return result, False
            after = child_context(ctx)
            merge_delta(after, result.delta)
            return result, await evaluate_condition(until, after)
    except TimeoutError:
        number = scope.innermost
        error = IterationTimeout(
            f"iteration {number} of loop '{_where(group)}' exceeded iteration_timeout={limit}s"
        )
        return Outcome("failed", {}, error), False
