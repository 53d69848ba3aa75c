"""What the execution strategies (``waves``, ``graphs``, ``loops``) share, Prefect-free: where a
run sits in loops (``Scope``), what a child's run produced (``Outcome``), what they need from
the runtime (``Executor``, optionally ``Restorer``), and how a child's failure reaches its
group (``failure_of``, ``absorb_failure``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ...workflow.context import ERRORS_KEY
from ...workflow.tree import Task
from ..contextops import describe_error, error_entry, merge_delta
from ..failures import GroupFailed

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


async def restore_members(
    ex: Executor, members: Sequence[Task], ctx: dict[str, Any], scope: Scope
) -> list[Outcome | None]:
    """Per member, its outcome from checkpoints when the executor can restore (else None)."""
    restore = getattr(ex, "restore", None)
    if restore is None:
        return [None] * len(members)
    return await restore(members, ctx, scope)  # type: ignore[no-any-return]


async def show_restored(
    ex: Executor, group: Task, scope: Scope, restored: Sequence[tuple[Task, Outcome]]
) -> None:
    """Let the executor show children restored from checkpoints (once, before a run)."""
    show = getattr(ex, "show_restored", None)
    if show is not None and restored:
        await show(group, scope, restored)


def failure_of(child: Task, result: Outcome) -> GroupFailed:
    """The error failing a group: names the task where the failure began, once, however
    many branch levels it crosses (the message does not grow with the depth)."""
    if isinstance(result.error, GroupFailed) and result.error.task_path:
        return GroupFailed(str(result.error), task_path=result.error.task_path)
    reason = describe_error(result.error) if result.error else "failed"
    return GroupFailed(f"task '{child.path}' failed: {reason}", task_path=child.path)


def absorb_failure(
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
