"""Execution types of a branch (spec §2.7, §8), Prefect-free.

Each strategy runs a branch's children through an ``Executor`` (the Prefect side supplies it)
and returns a ``GroupResult``: status, the merged delta (children in sibling order) and the
error that failed the group. Task-level ``on_failure`` is applied by the executor before a
result reaches here; these functions apply the group's ``on_error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, Literal, Protocol

from ..workflow.context import ERRORS_KEY
from ..workflow.tree import Task
from .contextops import child_context, describe_error, error_entry, merge_delta
from .failures import (
    DependencyError,
    GroupFailed,
    IterationTimeout,
    LoopExhausted,
    LoopTimeout,
)

NodeStatus = Literal["completed", "cached", "skipped", "failed"]


@dataclass(frozen=True)
class Scope:
    """Where an execution sits in loops: the iteration numbers from the outermost loop in."""

    iteration: tuple[int, ...] = ()

    def enter(self, number: int) -> Scope:
        return Scope((*self.iteration, number))

    @property
    def innermost(self) -> int | None:
        return self.iteration[-1] if self.iteration else None

    def label(self, path: str) -> str:
        """Run name of a task in this scope: ``path[i]`` inside a loop."""
        return (path or "root") + "".join(f"[{i}]" for i in self.iteration)


@dataclass
class NodeResult:
    """One child's outcome as its parent sees it."""

    status: NodeStatus
    delta: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    handled: bool = False
    """A failure absorbed by the task's ``on_failure: skip|use_default``."""
    handle: Any = None
    """Opaque run handle (a Prefect state) used to draw upstream edges."""
    blocked_by: str | None = None
    """For a graph task skipped because of a failed upstream: that upstream's path."""

    @property
    def failed(self) -> bool:
        return self.status == "failed" and not self.handled


@dataclass
class GroupResult:
    """A branch's outcome over all its children."""

    status: Literal["completed", "failed"]
    delta: dict[str, Any]
    error: BaseException | None = None
    iterations: int | None = None


class Executor(Protocol):
    """What a strategy needs from the runtime."""

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> NodeResult: ...

    def not_run(self, child: Task, reason: str) -> None: ...

    def warn(self, message: str) -> None: ...

    def iteration_started(self, group: Task, number: int) -> None: ...


class _FailFast(Exception):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _fail_error(child: Task, result: NodeResult) -> GroupFailed:
    reason = describe_error(result.error) if result.error else "failed"
    return GroupFailed(f"task '{child.path}' failed: {reason}", task_path=child.path)


def _absorb(
    ctx: dict[str, Any],
    delta: dict[str, Any],
    child: Task,
    result: NodeResult,
    scope: Scope,
) -> None:
    """Record a non-fatal failure in ``_errors`` (group on_error continue|ignore)."""
    entry = error_entry(child, result.error or "failed", scope.innermost)
    merge_delta(ctx, {ERRORS_KEY: [entry]})
    merge_delta(delta, {ERRORS_KEY: [entry]})


async def _run_wave(
    group: Task,
    members: Sequence[Task],
    ctx: dict[str, Any],
    ex: Executor,
    scope: Scope,
    fail_fast: bool,
) -> tuple[list[NodeResult | None], int | None]:
    """Run ``members`` concurrently on ``ctx``; results and the fail-fast index.

    Nothing changes ``ctx`` during a wave (results merge after it) and no child writes to its
    input (a leaf works on its own copy, a branch on a child context), so the members share it.
    """
    if len(members) == 1:
        return [await ex.run_child(members[0], ctx, scope)], None
    workers = group.settings.parallel_workers
    limit = asyncio.Semaphore(workers) if workers else None
    results: list[NodeResult | None] = [None] * len(members)

    async def one(index: int, child: Task) -> None:
        async with limit if limit is not None else contextlib.nullcontext():
            result = await ex.run_child(child, ctx, scope)
        results[index] = result
        if fail_fast and result.failed:
            raise _FailFast(index)

    first = await _gather_fail_fast([one(index, child) for index, child in enumerate(members)])
    return results, first


async def _gather_fail_fast(coros: Sequence[Any]) -> int | None:
    """Run coroutines in a TaskGroup; the index of the first ``_FailFast`` (siblings cancelled)."""
    failed: list[int] = []
    try:
        async with asyncio.TaskGroup() as tasks:
            for coro in coros:
                tasks.create_task(coro)
    except* _FailFast as group_error:
        failed = [exc.index for exc in group_error.exceptions if isinstance(exc, _FailFast)]
    return min(failed) if failed else None


async def run_waves(
    group: Task,
    waves: Sequence[Sequence[Task]],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
    *,
    on_error: str | None = None,
) -> GroupResult:
    """Run waves in order (members of a wave in parallel), merging in sibling order."""
    policy = on_error or group.on_error
    ctx = child_context(context)
    delta: dict[str, Any] = {}
    failures: list[GroupFailed] = []
    for wave_index, wave in enumerate(waves):
        results, fast = await _run_wave(group, wave, ctx, ex, scope, policy == "fail")
        for child, result in zip(wave, results, strict=True):
            if result is None:
                continue
            merge_delta(ctx, result.delta)
            merge_delta(delta, result.delta)
            if result.failed and policy != "fail":
                _absorb(ctx, delta, child, result, scope)
                if policy == "continue":
                    failures.append(_fail_error(child, result))
        failed_index = fast
        if failed_index is None and policy == "fail":
            failed_index = next((i for i, r in enumerate(results) if r and r.failed), None)
        if failed_index is not None:
            culprit = wave[failed_index]
            for later in [t for w in waves[wave_index + 1 :] for t in w]:
                ex.not_run(later, f"not run: '{culprit.path}' failed")
            return GroupResult("failed", delta, _fail_error(culprit, results[failed_index]))  # type: ignore[arg-type]
    if failures:
        return GroupResult("failed", delta, failures[0])
    return GroupResult("completed", delta)


def priority_waves(children: Sequence[Task]) -> list[list[Task]]:
    """Children grouped by priority (numeric prefix unless explicit), in ascending order."""
    ordered = sorted(children, key=lambda t: t.priority)
    return [list(members) for _, members in groupby(ordered, key=lambda t: t.priority)]


def _graph_ancestors(children: Sequence[Task]) -> dict[str, list[str]]:
    """Transitive upstream names of each child (sibling order); raises on bad edges."""
    names = [c.name for c in children]
    direct = {c.name: list(c.config.depends_on) for c in children}
    for name, ups in direct.items():
        for up in ups:
            if up not in direct:
                raise DependencyError(
                    f"task '{name}' depends on '{up}', which is not a sibling",
                    hint=f"siblings: {', '.join(names)}",
                )
    closure: dict[str, list[str]] = {}

    def visit(name: str, trail: tuple[str, ...]) -> set[str]:
        if name in trail:
            raise DependencyError(f"depends_on cycle: {' -> '.join((*trail, name))}")
        found: set[str] = set()
        for up in direct[name]:
            found |= {up} | visit(up, (*trail, name))
        return found

    for name in names:
        ups = visit(name, ())
        closure[name] = [n for n in names if n in ups]
    return closure


async def run_graph(
    group: Task, children: Sequence[Task], context: dict[str, Any], ex: Executor, scope: Scope
) -> GroupResult:
    """``depends_on`` DAG: independent tasks in parallel, dependents of a failure skipped."""
    ancestors = _graph_ancestors(children)
    loop = asyncio.get_running_loop()
    done: dict[str, asyncio.Future[NodeResult]] = {c.name: loop.create_future() for c in children}
    workers = group.settings.parallel_workers
    limit = asyncio.Semaphore(workers) if workers else None
    fail_fast = group.on_error == "fail"

    async def node(child: Task) -> None:
        ups = {name: await done[name] for name in child.config.depends_on}
        blocker = next((r for r in ups.values() if r.failed or r.blocked_by), None)
        if blocker is not None:
            origin = blocker.blocked_by or _path_of(children, ups, blocker)
            reason = f"skipped: upstream '{origin}' failed"
            ex.not_run(child, reason)
            result = NodeResult("skipped", blocked_by=origin)
        else:
            ctx = child_context(context)
            for name in ancestors[child.name]:
                merge_delta(ctx, done[name].result().delta)
            handles = [r.handle for r in ups.values() if r.handle is not None]
            async with limit if limit is not None else contextlib.nullcontext():
                result = await ex.run_child(child, ctx, scope, handles)
        done[child.name].set_result(result)
        if fail_fast and result.failed:
            raise _FailFast(children.index(child))

    index = await _gather_fail_fast([node(child) for child in children])
    if index is not None:
        culprit = children[index]
        delta = _merge_finished(children, done)
        for child in children:
            if not done[child.name].done():
                ex.not_run(child, f"not run: '{culprit.path}' failed")
        return GroupResult("failed", delta, _fail_error(culprit, done[culprit.name].result()))
    return _settle_graph(group, children, context, done, scope)


def _path_of(children: Sequence[Task], ups: dict[str, NodeResult], result: NodeResult) -> str:
    by_name = {c.name: c for c in children}
    for name, candidate in ups.items():
        if candidate is result:
            return by_name[name].path
    return "?"


def _merge_finished(children: Sequence[Task], done: dict[str, asyncio.Future[NodeResult]]) -> dict:
    delta: dict[str, Any] = {}
    for child in children:
        future = done[child.name]
        if future.done() and not future.cancelled():
            merge_delta(delta, future.result().delta)
    return delta


def _settle_graph(
    group: Task,
    children: Sequence[Task],
    context: dict[str, Any],
    done: dict[str, asyncio.Future[NodeResult]],
    scope: Scope,
) -> GroupResult:
    ctx = child_context(context)
    delta: dict[str, Any] = {}
    first_error: BaseException | None = None
    for child in children:
        result = done[child.name].result()
        merge_delta(ctx, result.delta)
        merge_delta(delta, result.delta)
        if result.failed:
            _absorb(ctx, delta, child, result, scope)
            first_error = first_error or _fail_error(child, result)
        elif result.blocked_by and first_error is None:
            first_error = GroupFailed(
                f"task '{child.path}' skipped: upstream '{result.blocked_by}' failed",
                task_path=result.blocked_by,
            )
    if first_error is not None and group.on_error == "continue":
        return GroupResult("failed", delta, first_error)
    return GroupResult("completed", delta)


async def run_loop(
    group: Task, children: Sequence[Task], context: dict[str, Any], ex: Executor, scope: Scope
) -> GroupResult:
    """Iterate the children (sequentially) until ``until`` holds or ``max_iterations``."""
    total = group.settings.timeout
    progress = [0]
    try:
        async with asyncio.timeout(total if total and total > 0 else None):
            return await _iterate(group, children, context, ex, scope, progress)
    except TimeoutError:
        error = LoopTimeout(f"loop '{_where(group)}' exceeded its settings.timeout of {total}s")
        return GroupResult("failed", {}, error, progress[0])


def _where(group: Task) -> str:
    return group.path or group.name


async def _iterate(
    group: Task,
    children: Sequence[Task],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
    progress: list[int],
) -> GroupResult:
    from ..expressions import compile_condition

    sub = group.config.subtasks
    assert sub is not None
    until = compile_condition(sub.until) if sub.until is not None else None
    maximum = sub.max_iterations or 1
    ctx = child_context(context)
    delta: dict[str, Any] = {}
    waves = [[child] for child in children]
    inner_policy = "ignore" if group.on_error == "ignore" else "fail"
    for number in range(1, maximum + 1):
        progress[0] = number
        ex.iteration_started(group, number)
        snapshot = (copy.deepcopy(ctx), copy.deepcopy(delta))
        result = await _one_iteration(group, waves, ctx, ex, scope.enter(number), inner_policy)
        if result.status == "failed":
            if group.on_error == "fail":
                return GroupResult("failed", delta, result.error, number)
            ctx, delta = snapshot
            failed_path = getattr(result.error, "task_path", "") or group.path
            entry = {
                "task": failed_path,
                "error": describe_error(result.error or "failed"),
                "iteration": number,
            }
            merge_delta(ctx, {ERRORS_KEY: [entry]})
            merge_delta(delta, {ERRORS_KEY: [entry]})
            continue
        merge_delta(ctx, result.delta)
        merge_delta(delta, result.delta)
        if until is not None and until.evaluate(ctx):
            return GroupResult("completed", delta, None, number)
    if until is None:
        return GroupResult("completed", delta, None, maximum)
    message = f"loop '{_where(group)}' reached max_iterations={maximum} without meeting 'until'"
    if group.on_max_iterations == "succeed_with_last":
        ex.warn(f"{message}; continuing with the last iteration's context")
        return GroupResult("completed", delta, None, maximum)
    return GroupResult("failed", delta, LoopExhausted(message), maximum)


async def _one_iteration(
    group: Task,
    waves: Sequence[Sequence[Task]],
    ctx: dict[str, Any],
    ex: Executor,
    scope: Scope,
    policy: str,
) -> GroupResult:
    limit = group.config.subtasks.iteration_timeout if group.config.subtasks else None
    try:
        async with asyncio.timeout(limit):
            return await run_waves(group, waves, ctx, ex, scope, on_error=policy)
    except TimeoutError:
        number = scope.innermost
        error = IterationTimeout(
            f"iteration {number} of loop '{_where(group)}' exceeded iteration_timeout={limit}s"
        )
        return GroupResult("failed", {}, error)


async def run_group(
    group: Task, context: dict[str, Any], ex: Executor, scope: Scope
) -> GroupResult:
    """Run a branch's children with its execution type."""
    children = list(group.children)
    kind = group.execution_type
    if kind == "sequential":
        return await run_waves(group, [[c] for c in children], context, ex, scope)
    if kind == "priority_groups":
        return await run_waves(group, priority_waves(children), context, ex, scope)
    if kind == "graph":
        return await run_graph(group, children, context, ex, scope)
    if kind == "loop":
        return await run_loop(group, children, context, ex, scope)
    return await run_waves(group, [children], context, ex, scope)
