"""Graph groups (``depends_on``), Prefect-free: independent members run in
parallel, each as soon as its upstreams finished; the dependents of a failure are skipped."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from ..workflow.tree import Task
from .contextops import child_context, merge_delta
from .failures import DependencyError, GroupFailed
from .fanout import FailFast, gather_fail_fast, is_signal
from .outcome import (
    Executor,
    Outcome,
    Scope,
    absorb_failure,
    failure_of,
    restore_members,
    show_restored,
)
from .plan import NodePlan


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
            raise FailFast(children.index(child))

    try:
        index = await gather_fail_fast([node(child) for child in children])
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
        return Outcome("failed", delta, failure_of(culprit, done[culprit.name].result()))
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
        (outcome,) = await restore_members(ex, [child], ctx, scope)
        if outcome is not None:
            restored[child.name] = outcome
    await show_restored(
        ex, group, scope, [(c, restored[c.name]) for c in children if c.name in restored]
    )
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
            absorb_failure(ctx, delta, child, result, scope)
            first_error = first_error or failure_of(child, result)
        elif result.blocked_by and first_error is None:
            first_error = GroupFailed(
                f"task '{child.path}' skipped: upstream '{result.blocked_by}' failed",
                task_path=result.blocked_by,
            )
    if first_error is not None and group.on_error == "continue":
        return Outcome("failed", delta, first_error)
    return Outcome("completed", delta)
