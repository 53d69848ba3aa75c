"""Runs the task tree as the plan says: a child's passes, a branch's children, their states.

``TreeExecutor`` is the ``Executor`` the execution types call back into: it runs one child
(a pass of a leaf, or a branch run) and applies the child's own failure policy; the types
apply the group's. How a pass, a gate and a branch call are carried out is its mode's:
:class:`LiveMode` runs them as Prefect task runs; ``checkpoints.ReplayMode`` reads them back
from checkpoints for the ``checkpoints.Restorer``, which restores children without running
them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from prefect.logging import get_run_logger
from prefect.utilities.annotations import allow_failure

from .. import telemetry
from ..errors import FolpipeError
from ..plan import Plan
from ..plan.contextops import (
    ContextBox,
    child_context,
    describe_error,
    merge_delta,
    pass_parameters,
)
from ..plan.execution import ChildPolicy, Outcome, Scope, run_group
from ..plan.failures import TaskTimedOut
from ..workflow.context import ERRORS_KEY
from ..workflow.tree import Task
from .approvals import ApprovalGates
from .checkpoints import BlockLocks, CheckpointLocks, Restorer, checkpoint_key_of, own_checkpoint
from .infra import SETTLE
from .report import RunTracker
from .report.artifacts import approval_text
from .runner import Runners, forget_result_links
from .tags import RunTags
from .tasks import PrefectTasks

LOG = logging.getLogger("prefect_folpipe.compile")
CANCELLED = "cancelled (a sibling failed, a timeout expired or the run was interrupted)"


class PassMode(Protocol):
    """How an executor carries out a pass, a gate and a branch call (live, or replayed)."""

    async def agent_pass(
        self,
        ex: TreeExecutor,
        task: Task,
        phase: str,
        context: dict[str, Any],
        scope: Scope,
        wait_for: Sequence[Any],
    ) -> Outcome: ...

    async def gate(
        self, ex: TreeExecutor, task: Task, context: dict[str, Any], scope: Scope
    ) -> dict[str, Any]: ...

    async def call_branch(
        self,
        ex: TreeExecutor,
        task: Task,
        context: dict[str, Any],
        scope: Scope,
        wait_for: Sequence[Any],
    ) -> Outcome: ...

    def child_done(self, child: Task, scope: Scope, outcome: Outcome) -> Outcome: ...


class TreeExecutor:
    """Runs children, passes and branches of one run, in the way its ``mode`` says."""

    def __init__(
        self,
        plan: Plan,
        tasks: PrefectTasks,
        runners: Runners,
        tracker: RunTracker,
        tags: RunTags,
        *,
        mode: PassMode | None = None,
        restorer: Restorer | None = None,
    ) -> None:
        self.plan = plan
        self.tasks = tasks
        self.runners = runners
        self.tracker = tracker
        self.tags = tags
        self.mode: PassMode = mode or LiveMode()
        self.restorer = restorer
        """Restores children from checkpoints without a task run each (``--fresh``: none)."""
        self.policy = ChildPolicy(plan.declared_outputs)
        self.warnings: list[str] = []
        self.failed_errors: dict[tuple[str, tuple[int, ...]], list[Any]] = {}
        """``_errors`` recorded inside a branch run that then failed, for its parent to keep
        (a failed branch run raises: its return value, the delta, never reaches the parent)."""

    def replica(self, mode: PassMode, tracker: RunTracker) -> TreeExecutor:
        """An executor over the same run in another mode, recording into ``tracker``."""
        twin = TreeExecutor(
            self.plan, self.tasks, self.runners, tracker, self.tags, mode=mode, restorer=None
        )
        twin.policy = self.policy
        return twin

    async def run_target(self, target: Task, context: dict[str, Any]) -> Outcome:
        """The task a run starts from (the root, or ``run-task``'s task): a branch whose
        every pass comes back from checkpoints is restored as one run."""
        if target.children and self.restorer is not None:
            restored = await self.restorer.restore_one(self, target, context, Scope(), start=True)
            if restored is not None:
                await self.show_restored(target, Scope(), [(target, restored)])
                return restored
        self.tracker.start(target.path)
        try:
            answer = await self.gate(target, context, Scope())
        except Exception as exc:  # an approval nobody gave
            outcome = Outcome("failed", error=exc)
        else:
            context = {**context, **answer}
            if target.children:
                outcome = await self.run_branch(target, context, Scope())
            else:
                outcome = await self.agent_pass(target, "single", context, Scope(), ())
            outcome.delta = {**answer, **outcome.delta}
        error = describe_error(outcome.error) if outcome.error else None
        self.tracker.finish(target.path, outcome.status, error=error)
        return outcome

    async def agent_pass(
        self, task: Task, phase: str, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> Outcome:
        """One agent pass of ``task``."""
        return await self.mode.agent_pass(self, task, phase, context, scope, wait_for)

    async def run_branch(self, task: Task, context: dict[str, Any], scope: Scope) -> Outcome:
        """First agent pass (if any), the children, then the final pass whose answer wins."""
        ctx = child_context(context)
        delta: dict[str, Any] = {}
        statuses: list[str] = []
        passes = self.plan.node(task.path).passes
        if "first" in passes:
            first = await self.agent_pass(task, "first", ctx, scope, ())
            if first.status == "failed":
                return first
            statuses.append(first.status)
            merge_delta(ctx, first.delta)
            merge_delta(delta, first.delta)
        group = await run_group(self.plan, task, ctx, self, scope)
        merge_delta(ctx, group.delta)
        merge_delta(delta, group.delta)
        if group.iterations is not None:
            self.tracker.add_iterations(task.path, group.iterations)
        if group.status == "failed":
            return Outcome("failed", delta, group.error)
        if "final" in passes:
            final = await self.agent_pass(task, "final", ctx, scope, ())
            if final.status == "failed":
                return final
            statuses.append(final.status)
            merge_delta(delta, final.delta)
        cached = _all_cached(self.tracker, task, statuses)
        return Outcome("cached" if cached else "completed", delta)

    async def execute_branch(
        self, task: Task, context: dict[str, Any], scope: list[int] | None
    ) -> Outcome:
        """The body of a branch run (task or subflow): raises when the branch failed."""
        where = Scope(tuple(scope or ()))
        outcome = await self.run_branch(task, context, where)
        if outcome.status == "failed":
            errors = outcome.delta.get(ERRORS_KEY)
            if errors:
                self.failed_errors[(task.path, where.iteration)] = list(errors)
            raise outcome.error or FolpipeError(f"branch '{task.path}' failed")
        return outcome

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> Outcome:
        """Run one child (leaf pass or branch), then apply its ``on_failure``."""
        outcome = await self._run_child(child, context, scope, wait_for)
        return self.mode.child_done(child, scope, outcome)

    async def _run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> Outcome:
        self.tracker.start(child.path, scope.innermost)
        if scope.iteration and not (child.children and child.execution_type == "loop"):
            self.tracker.count_iteration(child.path)
        try:
            timeout = self.plan.node(child.path).timeout
            early = self.policy.skips_before_gate(child)
            if early and await self.policy.should_skip(child, context, timeout):
                self.tracker.skip_tree(child, None)
                return Outcome("skipped")
            answer = await self.gated(child, context, scope)
            context = {**context, **answer} if answer else context
            if not early and await self.policy.should_skip(child, context, timeout):
                reason = _declined(self.tracker, child) if answer else None
                self.tracker.skip_tree(child, reason)
                if reason:
                    await self.mode_call("show_gate", child, scope, True, reason)
                return Outcome("skipped", dict(answer))  # the answer routes what follows
            if child.children:
                outcome = await self.mode.call_branch(self, child, context, scope, wait_for)
            else:
                outcome = await self.agent_pass(child, "single", context, scope, wait_for)
            if answer and outcome.status != "failed":
                outcome.delta = {**answer, **outcome.delta}
        except asyncio.CancelledError:
            self.tracker.finish(child.path, "failed", error=CANCELLED)
            raise
        except Exception as exc:  # e.g. a skip_if that cannot be evaluated
            outcome = Outcome("failed", error=exc)
        error_text = describe_error(outcome.error) if outcome.error else None
        self.tracker.finish(child.path, outcome.status, error=error_text)
        return _edge_past_failure(self.policy.on_failure(child, outcome, scope.innermost))

    async def gate(self, task: Task, context: dict[str, Any], scope: Scope) -> dict[str, Any]:
        """The answer of ``task``'s approval gate (``{}`` without one)."""
        return await self.mode.gate(self, task, context, scope)

    async def gated(self, task: Task, context: dict[str, Any], scope: Scope) -> dict[str, Any]:
        """``gate``; a gate nobody answered shows as the task's own run, ``Unanswered``."""
        try:
            return await self.gate(task, context, scope)
        except Exception as exc:
            await self.mode_call("show_gate", task, scope, False, describe_error(exc))
            raise

    async def mode_call(self, name: str, *args: Any) -> None:
        """Call the mode's optional ``name`` (only a live run shows gates in Prefect)."""
        call = getattr(self.mode, name, None)
        if call is not None:
            await call(self, *args)

    def not_run(self, child: Task, reason: str) -> None:
        if self.tracker.records[child.path].status == "failed":
            return  # cancelled while running: it already reports why
        self.tracker.skip_tree(child, reason)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        run_logger().warning(message)

    def iteration_started(self, group: Task, number: int) -> None:
        self.tracker.iteration_started(group.path, number)

    async def restore(
        self, members: Sequence[Task], context: dict[str, Any], scope: Scope
    ) -> list[Outcome | None]:
        """Per member of a wave, its outcome from checkpoints alone (``None``: it runs)."""
        if self.restorer is None:
            return [None] * len(members)
        return await self.restorer.restore(self, members, context, scope)

    async def show_restored(
        self, group: Task, scope: Scope, restored: Sequence[tuple[Task, Outcome]]
    ) -> None:
        if self.restorer is not None:
            await self.restorer.show(self, group, scope, restored)


def _all_cached(tracker: RunTracker, task: Task, own: Sequence[str]) -> bool:
    """A branch whose own passes and every leaf below it came back from checkpoints."""
    if any(status != "cached" for status in own):
        return False
    seen = [
        tracker.records[node.path].executions
        for node in task.walk()
        if node.path != task.path and not node.children
    ]
    flat = [status for executions in seen for status in executions]
    return bool(flat) and all(status in ("cached", "skipped") for status in flat)


def _declined(tracker: RunTracker, task: Task) -> str:
    """Why a task whose gate was answered did not run: the answer, who gave it, when."""
    answers = tracker.records[task.path].approvals
    given = approval_text(answers[-1]) if answers else "an answer"
    return f"declined: {given}; skip_if skipped the task"


class LiveMode:
    """Passes and branches as Prefect task runs (or subflow runs), gates asked for real."""

    def __init__(self, locks: CheckpointLocks | BlockLocks | None = None) -> None:
        self.gates: ApprovalGates | None = None
        """The run's approval gates (set when the run starts)."""
        self.locks: CheckpointLocks | BlockLocks = locks or CheckpointLocks(None)
        """Locks beside the checkpoints this run is making (``compile.checkpointlock``): a
        concurrent run of the same folder waits for a pass this run is making."""

    async def agent_pass(
        self,
        ex: TreeExecutor,
        task: Task,
        phase: str,
        context: dict[str, Any],
        scope: Scope,
        wait_for: Sequence[Any],
    ) -> Outcome:
        """One agent pass as a Prefect task run, on its task's runner."""
        runner = ex.runners.for_node(ex.plan.node(task.path))
        parameters = pass_parameters(context, scope, task.path, phase)
        key = checkpoint_key_of(ex.tasks.leaf_options(task, phase)[1], parameters)
        if key:
            own_checkpoint(task, key)
        locked = key is not None and await self.locks.acquire(key, task)  # another run's pass
        state = None
        try:
            state = await runner.run(ex.tasks.leaf(task, phase), parameters, wait_for)
        finally:  # a failed or cancelled pass releases at once, a completed one once written
            if locked and key is not None:
                await self.locks.release(key, settled=not _completed(state))
        SETTLE.expect(state)
        forget_result_links(state)
        outcome = await settle_pass(task, state)
        if outcome.status == "cached":  # the pass did not run: its checkpoint answered
            telemetry.restored(task.path, parameters["label"], phase)
        await runner.report(task, state, outcome, ex.tracker)
        return outcome

    async def gate(
        self, ex: TreeExecutor, task: Task, context: dict[str, Any], scope: Scope
    ) -> dict[str, Any]:
        """See ``compile.approvals``: raises when nobody answers, or suspends the run."""
        if task.config.approval is None:
            return {}
        if self.gates is None:
            raise FolpipeError(f"task '{task.path}' has an approval gate but the run has none")
        return await self.gates.answer(task, context, scope.iteration)

    async def call_branch(
        self,
        ex: TreeExecutor,
        task: Task,
        context: dict[str, Any],
        scope: Scope,
        wait_for: Sequence[Any],
    ) -> Outcome:
        subflow = ex.plan.node(task.path).branch_as == "subflow"
        call: dict[str, Any] = {
            # a subflow shows its input context as a parameter; a task gets it boxed
            "context": context if subflow else ContextBox(context),
            "label": scope.label(task.path),
            "scope": list(scope.iteration),
            "return_state": True,
        }
        if wait_for:
            call["wait_for"] = list(wait_for)
        # its own asyncio task: a branch nested in a branch would otherwise resume through
        # every level's frames (a RecursionError past ~95 levels); a task awaits its child
        # task without that chain, and cancelling the parent still cancels the child
        state = await asyncio.ensure_future(ex.tasks.branch(task)(**call))
        forget_result_links(state)
        if not subflow:
            SETTLE.expect(state)
        if state.is_completed():
            value: Outcome = await state.aresult()
            return Outcome(value.status, value.delta, handle=state)
        errors = ex.failed_errors.pop((task.path, scope.iteration), None)
        delta = {ERRORS_KEY: errors} if errors else {}
        return Outcome("failed", delta, await _error_of(task, state, "branch"), handle=state)

    def child_done(self, child: Task, scope: Scope, outcome: Outcome) -> Outcome:
        return outcome

    async def show_gate(
        self, ex: TreeExecutor, task: Task, scope: Scope, declined: bool, message: str
    ) -> None:
        """The task run of a task its gate kept from running (never fails the run)."""
        try:
            run = ex.tasks.gate_outcome(task)
            await run(label=scope.label(task.path), declined=declined, message=message,
                      return_state=True)  # fmt: skip
        except Exception as exc:
            LOG.debug("the gate of %s not shown: %s", task.path, exc)


def _edge_past_failure(outcome: Outcome) -> Outcome:
    """A failure absorbed by ``on_failure`` still draws its graph edge, but Prefect must not
    hold its dependents back: a ``wait_for`` on a failed state leaves them ``Pending``
    (``NotReady``), unless the state is wrapped in ``allow_failure``."""
    handle = outcome.handle
    if not outcome.handled or handle is None:
        return outcome
    is_failed = getattr(handle, "is_failed", None)
    outcome.handle = allow_failure(handle) if is_failed is not None and is_failed() else None
    return outcome


def _completed(state: Any) -> bool:
    """A pass that ran and completed (its checkpoint is being written)."""
    return state is not None and state.is_completed() and state.name != "Cached"


async def settle_pass(task: Task, state: Any) -> Outcome:
    """A pass's final Prefect state as cached / completed / failed (with its error)."""
    if state.is_completed():
        payload = await state.aresult()
        status = "cached" if state.name == "Cached" else "completed"
        return Outcome(status, dict(payload.get("delta") or {}), handle=state)
    if state.name == "TimedOut":
        error: BaseException = TaskTimedOut(
            f"task '{task.path}' exceeded settings.timeout={task.settings.timeout}s"
        )
    else:
        error = await _error_of(task, state, "task")
    return Outcome("failed", error=error, handle=state)


async def _error_of(task: Task, state: Any, what: str) -> BaseException:
    error = await state.aresult(raise_on_failure=False)
    if isinstance(error, BaseException):
        return error
    return FolpipeError(state.message or f"{what} '{task.path}' {state.name}")


def run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    try:
        return get_run_logger()
    except Exception:
        return LOG
