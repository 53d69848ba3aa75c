"""Runs the task tree as the plan says: a child's passes, a branch's children, their states.

``TreeExecutor`` is the ``outcome.Executor`` the execution strategies call back into: it runs
one child (a pass of a leaf, or a branch run), turns Prefect states into ``Outcome``s and
applies the child's own failure policy; the strategies apply the group's. It also restores
children from checkpoints without running them (``CheckpointReplay``, ``compile.restore``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from prefect.logging import get_run_logger
from prefect.utilities.annotations import allow_failure

from ..errors import FolpipeError
from ..workflow.context import ERRORS_KEY
from ..workflow.names import RESTORED_SUFFIX
from ..workflow.tree import Task
from .approval import ApprovalGates
from .checkpointlock import CheckpointLocks
from .contextops import ContextBox, child_context, describe_error, merge_delta
from .failures import TaskTimedOut
from .groups import run_group
from .leaf import pass_label
from .outcome import Outcome, Scope
from .plan import Plan
from .policy import ChildPolicy
from .report import RunTracker
from .restore import CheckpointReader, NotRestorable, RecordingTracker, RestoredPass
from .runner import Runners
from .server import SETTLE
from .storeguard import checkpoint_key_of, local_folder, own_checkpoint
from .tags import RunTags
from .tasks import PrefectTasks

LOG = logging.getLogger("prefect_folpipe.compile")
CANCELLED = "cancelled (a sibling failed, a timeout expired or the run was interrupted)"


class TreeExecutor:
    """Runs children, passes and branches of one run through its Prefect tasks and runners."""

    def __init__(
        self,
        plan: Plan,
        tasks: PrefectTasks,
        runners: Runners,
        tracker: RunTracker,
        tags: RunTags,
        *,
        restore: bool = True,
    ) -> None:
        self.plan = plan
        self.tasks = tasks
        self.runners = runners
        self.tracker = tracker
        self.tags = tags
        self.policy = ChildPolicy(plan.declared_outputs)
        self.warnings: list[str] = []
        self.restoring = restore
        """Restore children from checkpoints without a task run each (``--fresh``: no)."""
        self.reader = CheckpointReader()
        self.locks = CheckpointLocks(local_folder(tasks.storage))
        """Locks beside the checkpoints this run is making (``compile.checkpointlock``)."""
        self.gates: ApprovalGates | None = None
        """The run's approval gates (set when the run starts)."""
        self._failed_errors: dict[tuple[str, tuple[int, ...]], list[Any]] = {}
        """``_errors`` recorded inside a branch run that then failed, for its parent to keep
        (a failed branch run raises: its return value, the delta, never reaches the parent)."""

    async def run_target(self, target: Task, context: dict[str, Any]) -> Outcome:
        """The task a run starts from (the root, or ``run-task``'s task): a branch whose
        every pass comes back from checkpoints is restored as one run."""
        if target.children:
            restored = await self.restore_one(target, context, Scope(), start=True)
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
        """One agent pass as a Prefect task run, on its task's runner."""
        runner = self.runners.for_node(self.plan.node(task.path))
        parameters = {
            "context": ContextBox(context),
            "label": pass_label(scope.label(task.path), phase),
            "scope": list(scope.iteration),
        }
        key = checkpoint_key_of(self.tasks.leaf_options(task, phase)[1], parameters)
        if key:
            own_checkpoint(task, key)
        locked = key is not None and await self.locks.acquire(key, task)  # another run's pass
        state = None
        try:
            state = await runner.run(self.tasks.leaf(task, phase), parameters, wait_for)
        finally:  # a failed or cancelled pass releases at once, a completed one once written
            if locked and key is not None:
                self.locks.release(key, settled=not _completed(state))
        SETTLE.expect(state)
        outcome = await settle_pass(task, state)
        await runner.report(task, state, outcome, self.tracker)
        return outcome

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
        return Outcome("cached" if self._all_cached(task, statuses) else "completed", delta)

    def _all_cached(self, task: Task, own: Sequence[str]) -> bool:
        if any(status != "cached" for status in own):
            return False
        seen = [
            self.tracker.records[node.path].executions
            for node in task.walk()
            if node.path != task.path and not node.children
        ]
        flat = [status for executions in seen for status in executions]
        return bool(flat) and all(status in ("cached", "skipped") for status in flat)

    async def execute_branch(
        self, task: Task, context: dict[str, Any], scope: list[int] | None
    ) -> Outcome:
        """The body of a branch run (task or subflow): raises when the branch failed."""
        where = Scope(tuple(scope or ()))
        outcome = await self.run_branch(task, context, where)
        if outcome.status == "failed":
            errors = outcome.delta.get(ERRORS_KEY)
            if errors:
                self._failed_errors[(task.path, where.iteration)] = list(errors)
            raise outcome.error or FolpipeError(f"branch '{task.path}' failed")
        return outcome

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> Outcome:
        """Run one child (leaf pass or branch), then apply its ``on_failure``."""
        self.tracker.start(child.path, scope.innermost)
        if scope.iteration and not (child.children and child.execution_type == "loop"):
            self.tracker.count_iteration(child.path)
        try:
            timeout = self.plan.node(child.path).timeout
            early = self.policy.skips_before_gate(child)
            if early and await self.policy.should_skip(child, context, timeout):
                self.tracker.skip_tree(child, None)
                return Outcome("skipped")
            answer = await self.gate(child, context, scope)
            context = {**context, **answer} if answer else context
            if not early and await self.policy.should_skip(child, context, timeout):
                self.tracker.skip_tree(child, None)
                return Outcome("skipped", dict(answer))  # the answer routes what follows
            if child.children:
                outcome = await self._call_branch(child, context, scope, wait_for)
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
        """The answer of ``task``'s approval gate (``{}`` without one); see
        ``compile.approval``. Raises when nobody answers, or suspends the run (``Pause``)."""
        if task.config.approval is None:
            return {}
        if self.gates is None:
            raise FolpipeError(f"task '{task.path}' has an approval gate but the run has none")
        return await self.gates.answer(task, context, scope.iteration)

    async def _call_branch(
        self, task: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> Outcome:
        subflow = self.plan.node(task.path).branch_as == "subflow"
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
        state = await asyncio.ensure_future(self.tasks.branch(task)(**call))
        if not subflow:
            SETTLE.expect(state)
        if state.is_completed():
            value: Outcome = await state.aresult()
            return Outcome(value.status, value.delta, handle=state)
        errors = self._failed_errors.pop((task.path, scope.iteration), None)
        delta = {ERRORS_KEY: errors} if errors else {}
        return Outcome("failed", delta, await _error_of(task, state, "branch"), handle=state)

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
        return [await self.restore_one(child, context, scope) for child in members]

    async def restore_one(
        self, child: Task, context: dict[str, Any], scope: Scope, *, start: bool = False
    ) -> Outcome | None:
        """``child``'s subtree replayed from checkpoints and committed to the tracker, or
        ``None`` when any pass of it must run (``start``: the run's target)."""
        if not self.restoring or (start and child.config.approval is not None):
            return None
        replay = CheckpointReplay(self)
        outcome: Outcome | None = None
        try:
            if start:
                replay.tracker.start(child.path)
                outcome = await replay.run_branch(child, context, scope)
                replay.tracker.finish(child.path, outcome.status)
            else:
                outcome = await replay.run_child(child, context, scope)
        except* NotRestorable:
            outcome = None
        if outcome is None or outcome.status == "failed":
            return None
        replay.tracker.commit()
        for message in replay.warnings:
            self.warn(message)
        outcome.restored = tuple(replay.entries)
        return outcome

    async def show_restored(
        self, group: Task, scope: Scope, restored: Sequence[tuple[Task, Outcome]]
    ) -> None:
        """One ``Cached`` task run for the children restored in ``group``, its artifact
        listing every task and its checkpoint; their ``handle`` (graph edges) is that run."""
        entries = [entry for _, outcome in restored for entry in outcome.restored]
        if not any(entry.status == "cached" for entry in entries):
            return
        names = [child.name for child, _ in restored]
        if restored[0][0] is group:
            what = "every task"
        elif len(names) <= 3:
            what = ", ".join(names)
        else:
            what = f"{names[0]} … {names[-1]} ({len(names)} tasks)"
        label = f"{scope.label(group.path)}: {what} {RESTORED_SUFFIX}"
        state = await self.tasks.restored(group)(
            label=label, entries=ContextBox(entries), return_state=True
        )
        for _, outcome in restored:
            outcome.handle = state


class CheckpointReplay(TreeExecutor):
    """The executor replaying a subtree from checkpoints: each pass reads the checkpoint its
    task would reuse (``NotRestorable`` when there is none), branches run in place, and the
    tracker records changes for the run's tracker to replay once all came back."""

    def __init__(self, real: TreeExecutor) -> None:
        tracker = RecordingTracker(real.tracker)
        super().__init__(real.plan, real.tasks, real.runners, tracker, real.tags, restore=False)
        self.tracker: RecordingTracker = tracker
        self.policy = real.policy
        self.reader = real.reader
        self.entries: list[RestoredPass] = []

    async def agent_pass(
        self, task: Task, phase: str, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> Outcome:
        label = pass_label(scope.label(task.path), phase)
        parameters = {
            "context": ContextBox(context),
            "label": label,
            "scope": list(scope.iteration),
        }
        _, options = self.tasks.leaf_options(task, phase)
        hit = await self.reader.read(options, parameters, lambda: self.tasks.leaf(task, phase))
        if hit is None:
            raise NotRestorable(task.path)
        self.entries.append(RestoredPass(task.path, label, "cached", hit.key, hit.where))
        return Outcome("cached", dict(hit.payload["delta"]))

    async def gate(self, task: Task, context: dict[str, Any], scope: Scope) -> dict[str, Any]:
        """A task behind an approval gate is not restored: its run asks (or replays) the gate."""
        if task.config.approval is not None:
            raise NotRestorable(task.path)
        return {}

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> Outcome:
        outcome = await super().run_child(child, context, scope, wait_for)
        if outcome.status == "failed":  # e.g. a skip_if that cannot be evaluated
            raise NotRestorable(child.path)
        if outcome.status == "skipped":
            self.entries.append(RestoredPass(child.path, scope.label(child.path), "skipped"))
        return outcome

    async def _call_branch(
        self, task: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any]
    ) -> Outcome:
        outcome = await self.run_branch(task, context, scope)
        if outcome.status == "failed":
            raise NotRestorable(task.path)
        return Outcome(outcome.status, outcome.delta)


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
