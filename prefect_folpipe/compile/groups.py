"""Execution types of a branch (spec §2.7, §8), Prefect-free.

Each strategy runs a branch's children as its ``Plan`` node says (waves, the DAG, the loop
bounds) through an ``Executor`` (the Prefect side supplies it) and returns an ``Outcome``:
status, the merged delta (children in sibling order) and the error that failed the group.
Task-level ``on_failure`` is applied by the executor before an outcome reaches here; these
functions apply the group's ``on_error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..expressions import Condition, compile_condition
from ..workflow.context import ERRORS_KEY
from ..workflow.tree import Task
from .contextops import child_context, describe_error, error_entry, merge_delta
from .evaluation import evaluate_condition
from .failures import (
    DependencyError,
    GroupFailed,
    IterationTimeout,
    LoopExhausted,
    LoopTimeout,
)
from .plan import LoopPlan, NodePlan, Plan

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
class Outcome:
    """What one run of a task, a pass or a group produced, as its parent sees it."""

    status: NodeStatus
    delta: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    handle: Any = None
    """Opaque run handle (a Prefect state) used to draw upstream edges."""
    handled: bool = False
    """A failure absorbed by the task's ``on_failure: skip|use_default``."""
    blocked_by: str | None = None
    """For a graph task skipped because of a failed upstream: that upstream's path."""
    iterations: int | None = None
    """For a loop group: the iterations it ran."""
    restored: tuple[Any, ...] = ()
    """For a child restored from checkpoints without running: what came back (the
    executor's entries, listed by the run that shows the restore)."""

    @property
    def failed(self) -> bool:
        return self.status == "failed" and not self.handled


class Executor(Protocol):
    """What a strategy needs from the runtime."""

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> Outcome: ...

    def not_run(self, child: Task, reason: str) -> None: ...

    def warn(self, message: str) -> None: ...

    def iteration_started(self, group: Task, number: int) -> None: ...


class Restorer(Protocol):
    """What an executor may add: children restored from checkpoints without running them
    (``compile.restore``). Strategies ask before each wave (or, in a graph, before it starts)
    and show what came back once, before running the rest."""

    async def restore(
        self, members: Sequence[Task], context: dict[str, Any], scope: Scope
    ) -> list[Outcome | None]:
        """Per member, its outcome from checkpoints alone, or ``None`` when it must run."""
        ...

    async def show_restored(
        self, group: Task, scope: Scope, restored: Sequence[tuple[Task, Outcome]]
    ) -> None:
        """Report restored children (sets their outcomes' ``handle``)."""
        ...


async def _restore(
    ex: Executor, members: Sequence[Task], ctx: dict[str, Any], scope: Scope
) -> list[Outcome | None]:
    restore = getattr(ex, "restore", None)
    if restore is None:
        return [None] * len(members)
    return await restore(members, ctx, scope)  # type: ignore[no-any-return]


async def _show(
    ex: Executor, group: Task, scope: Scope, restored: Sequence[tuple[Task, Outcome]]
) -> None:
    show = getattr(ex, "show_restored", None)
    if show is not None and restored:
        await show(group, scope, restored)


class _FailFast(Exception):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _fail_error(child: Task, result: Outcome) -> GroupFailed:
    """The error failing a group: names the task where the failure began, once, however
    many branch levels it crosses (the message does not grow with the depth)."""
    if isinstance(result.error, GroupFailed) and result.error.task_path:
        return GroupFailed(str(result.error), task_path=result.error.task_path)
    reason = describe_error(result.error) if result.error else "failed"
    return GroupFailed(f"task '{child.path}' failed: {reason}", task_path=child.path)


def _absorb(
    ctx: dict[str, Any],
    delta: dict[str, Any],
    child: Task,
    result: Outcome,
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
            raise _FailFast(index)

    first = await _gather_fail_fast([one(index, child) for index, child in todo])
    return results, first


def is_signal(exc: BaseException) -> bool:
    """A control signal passing up the tree (a ``prefect.exceptions.PrefectSignal`` such as
    ``Pause``: the run was suspended for an approval), as opposed to an error, a cancellation
    or an outside signal (Prefect's ``TerminationSignal`` is an interruption). Told by class
    name, so this module stays Prefect-free."""
    return any(
        cls.__name__ == "PrefectSignal" and cls.__module__ == "prefect.exceptions"
        for cls in type(exc).__mro__
    )


async def _caught(coro: Any, signals: list[BaseException]) -> None:
    try:
        await coro
    except BaseException as exc:
        if not is_signal(exc):
            raise
        signals.append(exc)  # the siblings in flight finish first


def _start(tasks: asyncio.TaskGroup, coro: Any, signals: list[BaseException]) -> None:
    wrapped = _caught(coro, signals)
    try:
        tasks.create_task(wrapped)
    except BaseException:
        wrapped.close()
        raise


async def _gather_fail_fast(coros: Sequence[Any]) -> int | None:
    """Run coroutines in a TaskGroup; the index of the first ``_FailFast`` (siblings cancelled).

    A control signal (``is_signal``) of one coroutine lets the others finish, then goes on up
    as itself (a task group would wrap it)."""
    failed: list[int] = []
    signals: list[BaseException] = []
    try:
        async with asyncio.TaskGroup() as tasks:
            for coro in coros:
                _start(tasks, coro, signals)
    except* _FailFast as group_error:
        failed = [exc.index for exc in group_error.exceptions if isinstance(exc, _FailFast)]
    finally:
        for coro in coros:  # those never started (refused, cancelled first) end unawaited
            coro.close()
    if signals:
        raise signals[0]
    return min(failed) if failed else None


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
        restored = await _restore(ex, wave, ctx, scope)
        shown += [(child, done) for child, done in zip(wave, restored, strict=True) if done]
        if None in restored:
            await _show(ex, group, scope, shown)
            shown = []
        results, fast = await _run_wave(group, wave, ctx, ex, scope, policy == "fail", restored)
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
            return Outcome("failed", delta, _fail_error(culprit, results[failed_index]))  # type: ignore[arg-type]
    await _show(ex, group, scope, shown)
    if failures:
        return Outcome("failed", delta, failures[0])
    return Outcome("completed", delta)


async def run_graph(
    group: Task,
    node_plan: NodePlan,
    children: Sequence[Task],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
) -> Outcome:
    """``depends_on`` DAG: independent tasks in parallel, dependents of a failure skipped."""
    dag = node_plan.dag
    assert dag is not None
    if dag.problem:
        names = ", ".join(child.name for child in children)
        raise DependencyError(dag.problem, hint=f"siblings: {names}")
    ancestors = dag.ancestors
    loop = asyncio.get_running_loop()
    done: dict[str, asyncio.Future[Outcome]] = {c.name: loop.create_future() for c in children}
    workers = group.settings.parallel_workers
    limit = asyncio.Semaphore(workers) if workers else None
    fail_fast = group.on_error == "fail"
    restored = await _restore_graph(group, dag, children, context, ex, scope)

    async def node(child: Task) -> None:
        try:
            await run_node(child)
        except BaseException as exc:  # a signal reaches the dependents waiting for this node
            if is_signal(exc) and not done[child.name].done():
                done[child.name].set_exception(exc)
            raise

    async def run_node(child: Task) -> None:
        if child.name in restored:
            done[child.name].set_result(restored[child.name])
            return
        ups = {name: await done[name] for name in dag.upstreams[child.name]}
        blocker = next((r for r in ups.values() if r.failed or r.blocked_by), None)
        if blocker is not None:
            origin = blocker.blocked_by or _path_of(children, ups, blocker)
            reason = f"skipped: upstream '{origin}' failed"
            ex.not_run(child, reason)
            result = Outcome("skipped", blocked_by=origin)
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

    try:
        index = await _gather_fail_fast([node(child) for child in children])
    finally:
        for future in done.values():  # a signal stored for dependents that never came
            if future.done() and not future.cancelled():
                future.exception()
    if index is not None:
        culprit = children[index]
        delta = _merge_finished(children, done)
        for child in children:
            if not done[child.name].done():
                ex.not_run(child, f"not run: '{culprit.path}' failed")
        return Outcome("failed", delta, _fail_error(culprit, done[culprit.name].result()))
    return _settle_graph(group, children, context, done, scope)


async def _restore_graph(
    group: Task,
    dag: Any,
    children: Sequence[Task],
    context: dict[str, Any],
    ex: Executor,
    scope: Scope,
) -> dict[str, Outcome]:
    """The children restorable from checkpoints before anything runs: in stage order, each
    whose upstreams all came back (its input is then known), shown at once."""
    restored: dict[str, Outcome] = {}
    ordered = sorted(enumerate(children), key=lambda pair: (dag.stages[pair[1].name], pair[0]))
    for _, child in ordered:
        if any(name not in restored for name in dag.upstreams[child.name]):
            continue
        ctx = child_context(context)
        for name in dag.ancestors[child.name]:
            merge_delta(ctx, restored[name].delta)
        (outcome,) = await _restore(ex, [child], ctx, scope)
        if outcome is not None:
            restored[child.name] = outcome
    await _show(ex, group, scope, [(c, restored[c.name]) for c in children if c.name in restored])
    return restored


def _path_of(children: Sequence[Task], ups: dict[str, Outcome], result: Outcome) -> str:
    by_name = {c.name: c for c in children}
    for name, candidate in ups.items():
        if candidate is result:
            return by_name[name].path
    return "?"


def _merge_finished(children: Sequence[Task], done: dict[str, asyncio.Future[Outcome]]) -> dict:
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
    done: dict[str, asyncio.Future[Outcome]],
    scope: Scope,
) -> Outcome:
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
        return Outcome("failed", delta, first_error)
    return Outcome("completed", delta)


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
            entry = {
                "task": failed_path,
                "error": describe_error(result.error or "failed"),
                "iteration": number,
            }
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


async def run_group(
    plan: Plan, group: Task, context: dict[str, Any], ex: Executor, scope: Scope
) -> Outcome:
    """Run a branch's children as its plan node says."""
    node = plan.node(group.path)
    if node.dag is not None:
        return await run_graph(group, node, plan.children(group.path), context, ex, scope)
    waves = [[plan.task(path) for path in wave] for wave in node.waves]
    if node.loop is not None:
        return await run_loop(group, node.loop, waves, context, ex, scope)
    return await run_waves(group, waves, context, ex, scope)
