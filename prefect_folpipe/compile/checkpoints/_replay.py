"""Restoring children from checkpoints without a Prefect task run each.

Before a group runs a wave, the executor asks its :class:`Restorer` for each member: the
member's subtree is walked by the same executor code (strategies, ``skip_if``, checkpoint
keys) in :class:`ReplayMode`, where a pass reads the checkpoint it would reuse instead of
running, a gate stops the walk, and a branch runs in place. The first pass without a usable
checkpoint stops the walk (``NotRestorable``) and the member runs as usual; a member whose
whole subtree came back is restored: its records reach the run's tracker as a run would have
left them, and the group shows what it restored as one ``Cached`` task run, tagged with the
paths it stands for (they go on as it starts when none has a concurrency limit: Prefect
asks the API for a lease for every tag a task run is created with).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from prefect import tags as prefect_tags

from ... import telemetry
from ...plan.contextops import ContextBox, pass_parameters
from ...plan.execution import Outcome, Scope
from ...workflow.names import RESTORED_SUFFIX, restored_tag
from ...workflow.tree import Task
from ._restore import CheckpointReader, NotRestorable, RecordingTracker, RestoredPass

if TYPE_CHECKING:
    from ..executor import TreeExecutor


class ReplayMode:
    """How the executor walks a subtree it restores: passes read checkpoints, gates and
    failures stop the walk, branches run in place; ``entries`` lists what came back."""

    def __init__(self, reader: CheckpointReader) -> None:
        self.reader = reader
        self.entries: list[RestoredPass] = []

    async def agent_pass(
        self,
        ex: TreeExecutor,
        task: Task,
        phase: str,
        context: dict[str, Any],
        scope: Scope,
        wait_for: Sequence[Any],
    ) -> Outcome:
        parameters = pass_parameters(context, scope, task.path, phase)
        label = parameters["label"]
        _, options = ex.tasks.leaf_options(task, phase)
        hit = await self.reader.read(options, parameters, lambda: ex.tasks.leaf(task, phase))
        if hit is None:
            raise NotRestorable(task.path)
        self.entries.append(RestoredPass(task.path, label, "cached", hit.key, hit.where))
        telemetry.restored(task.path, label, phase)
        return Outcome("cached", dict(hit.payload["delta"]))

    async def gate(
        self, ex: TreeExecutor, task: Task, context: dict[str, Any], scope: Scope
    ) -> dict[str, Any]:
        """A task behind an approval gate is not restored: its run asks (or replays) the gate."""
        if task.config.approval is not None:
            raise NotRestorable(task.path)
        return {}

    async def call_branch(
        self,
        ex: TreeExecutor,
        task: Task,
        context: dict[str, Any],
        scope: Scope,
        wait_for: Sequence[Any],
    ) -> Outcome:
        outcome = await ex.run_branch(task, context, scope)
        if outcome.status == "failed":
            raise NotRestorable(task.path)
        return Outcome(outcome.status, outcome.delta)

    def child_done(self, child: Task, scope: Scope, outcome: Outcome) -> Outcome:
        if outcome.status == "failed":  # e.g. a skip_if that cannot be evaluated
            raise NotRestorable(child.path)
        if outcome.status == "skipped":
            self.entries.append(RestoredPass(child.path, scope.label(child.path), "skipped"))
        return outcome


class Restorer:
    """One run's restores: a checkpoint reader shared by every replay, and how restored
    children are shown."""

    def __init__(self) -> None:
        self.reader = CheckpointReader()

    async def restore(
        self, ex: TreeExecutor, members: Sequence[Task], context: dict[str, Any], scope: Scope
    ) -> list[Outcome | None]:
        """Per member of a wave, its outcome from checkpoints alone (``None``: it runs)."""
        return [await self.restore_one(ex, child, context, scope) for child in members]

    async def restore_one(
        self,
        ex: TreeExecutor,
        child: Task,
        context: dict[str, Any],
        scope: Scope,
        *,
        start: bool = False,
    ) -> Outcome | None:
        """``child``'s subtree replayed from checkpoints and committed to the tracker, or
        ``None`` when any pass of it must run (``start``: the run's target)."""
        if start and child.config.approval is not None:
            return None
        mode = ReplayMode(self.reader)
        replay = ex.replica(mode, RecordingTracker(ex.tracker))
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
        replay.tracker.commit()  # type: ignore[attr-defined]
        for message in replay.warnings:
            ex.warn(message)
        outcome.restored = tuple(mode.entries)
        return outcome

    async def show(
        self, ex: TreeExecutor, group: Task, scope: Scope, restored: Sequence[tuple[Task, Outcome]]
    ) -> None:
        """One ``Cached`` task run for the children restored in ``group``, tagged with the
        paths it stands for, its artifact listing every task and its checkpoint; their
        ``handle`` (graph edges) is that run."""
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
        covered = [restored_tag(child.path) for child, _ in restored]
        late = ex.tags.plan.unlimited(covered)  # no lease request for hundreds of paths
        with prefect_tags(*([] if late else covered)):
            state = await ex.tasks.restored(group)(
                label=label,
                entries=ContextBox(entries),
                covered=ContextBox(covered if late else []),
                return_state=True,
            )
        for _, outcome in restored:
            outcome.handle = state
