"""``loop``: the children run one after another, once an iteration, until ``until`` holds or
``max_iterations`` is reached, each iteration within its ``iteration_timeout``."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ...expressions import Condition, compile_condition
from ...workflow.context import ERRORS_KEY
from ...workflow.tree import Task
from .._nodes import Edge, LoopPlan, NodePlan, timeout_of
from ..contextops import child_context, error_record, merge_delta
from ..failures import IterationTimeout, LoopExhausted, LoopTimeout
from ._evaluation import evaluate_condition
from ._kind import ExecutionType, PreviewWalker, Shape, condition_text, one_wave_each
from ._outcome import Executor, Outcome, Scope
from ._sequential import order_edges
from ._waves import run_waves

if TYPE_CHECKING:
    from .._plan import Plan


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


class Loop(ExecutionType):
    name = "loop"
    concurrent = False

    def shape(self, task: Task) -> Shape:
        sub = task.config.subtasks
        assert sub is not None
        bounds = LoopPlan(
            until=sub.until,
            max_iterations=sub.max_iterations,
            iteration_timeout=sub.iteration_timeout,
            on_max_iterations=sub.on_max_iterations,
            timeout=timeout_of(task),
        )
        return Shape(waves=one_wave_each(task), loop=bounds)

    def edges(self, task: Task) -> Iterator[Edge]:
        yield from order_edges(task)
        children = task.children
        if children:
            sub = task.config.subtasks
            bound = f"max {sub.max_iterations}" if sub and sub.max_iterations else "unbounded"
            label = f"next iteration ({bound})"
            yield Edge(children[-1].path, children[0].path, "next_iteration", label)

    def summary(self, node: NodePlan) -> list[str]:
        return [loop_bounds(node)]

    def child_prefix(self, plan: Plan, parent: NodePlan, child: NodePlan, index: int) -> str:
        return f"{index}. "

    def preview(
        self, walker: PreviewWalker, node: NodePlan, wave: str, inner: dict, delta: dict, at: Any
    ) -> None:
        """Iterations while every pass comes from a checkpoint and ``until`` does not hold;
        the first iteration where something runs is estimated for every iteration left."""
        assert node.loop is not None
        repeat, scope = at
        maximum = node.loop.max_iterations or 1
        until = node.loop.until
        waves = self.preview_waves(walker.plan, node)
        for number in range(1, maximum + 1):
            before = len(walker.steps)
            times = repeat * (maximum - number + 1)
            walker.children(node, waves, wave, inner, delta, (times, (*scope, number)))
            walked = walker.steps[before:]
            for step in walked:
                step.iteration = number
            if any(step.status == "runs" for step in walked):
                return
            if until is not None and compile_condition(until).evaluate(inner):
                return

    async def run(
        self, plan: Plan, group: Task, context: dict[str, Any], ex: Executor, scope: Scope
    ) -> Outcome:
        node = plan.node(group.path)
        assert node.loop is not None
        waves = [[plan.task(path) for path in wave] for wave in node.waves]
        return await run_loop(group, node.loop, waves, context, ex, scope)


def loop_bounds(node: NodePlan) -> str:
    """``until ... · max N iterations · ...`` for a loop branch."""
    loop = node.loop
    if loop is None:
        return ""
    parts = [f"until {condition_text(loop.until)}" if loop.until is not None else "no until"]
    if loop.max_iterations is not None:
        parts.append(f"max {loop.max_iterations} iterations")
    else:
        parts.append("no max_iterations")
    if loop.iteration_timeout is not None:
        parts.append(f"{loop.iteration_timeout:g}s per iteration")
    parts.append(f"on max: {loop.on_max_iterations}")
    return " · ".join(parts)
