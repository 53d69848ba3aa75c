"""What a run reports (Prefect-free): per-task records, the tracker, and ``RunResult``.

``RunResult.to_json()`` is the ``folpipe run --json`` document (docs/running.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..._process.wording import plural
from ...plan import Plan
from ...workflow.tree import Task

Status = Literal["pending", "running", "completed", "cached", "skipped", "failed"]
Listener = Callable[[str, "TaskRecord"], None]


@dataclass
class TaskRecord:
    """Everything reported about one task, summed over its executions (loop iterations)."""

    path: str
    name: str
    kind: str
    depth: int
    status: Status = "pending"
    attempts: int = 0
    iterations: int | None = None
    model_calls: int = 0
    replayed_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None
    current_iteration: int | None = None
    started: float | None = None
    executions: list[str] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    """Each gate of the task (or of its tools' calls) answered: what, by whom, when."""

    def settle(self) -> Status:
        """The reported status: a failed last execution wins, then completed, then cached."""
        if not self.executions:
            return "skipped" if self.status in ("pending", "skipped") else self.status
        if self.executions[-1] == "failed":
            return "failed"
        for status in ("completed", "cached"):
            if status in self.executions:
                return status  # type: ignore[return-value]
        return "skipped"

    def to_dict(self) -> dict[str, Any]:
        """One entry of the ``tasks`` list of the run document."""
        return {
            "path": self.path,
            "name": self.name,
            "status": self.settle(),
            "attempts": self.attempts,
            "iterations": self.iterations,
            "model_calls": self.model_calls,
            "replayed_calls": self.replayed_calls,
            "tool_calls": self.tool_calls,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
        } | ({"approvals": list(self.approvals)} if self.approvals else {})


@dataclass
class TaskCounts:
    """How the tasks of one run ended: one per task of the tree, the root included (the rows
    of the run document and of its summary). ``folpipe status``, the run summary, the line
    ``folpipe run`` prints and the task runs read back all count through :func:`count_tasks`."""

    total: int = 0
    completed: int = 0
    """Ran in this run."""
    cached: int = 0
    """Came back from their checkpoints."""
    failed: int = 0
    skipped: int = 0
    running: int = 0
    other: int = 0
    """Not started (yet)."""

    def line(self) -> str:
        """``9 tasks: 2 ran, 7 from checkpoints`` (failed, skipped, running when any)."""
        parts = [f"{self.completed} ran", f"{self.cached} from checkpoints", *self.rest()]
        return f"{plural(self.total, 'task')}: {', '.join(parts)}"

    def rest(self) -> list[str]:
        """``["1 failed", "2 skipped"]``: the outcomes besides ran and cached, when any."""
        pairs = ((self.failed, "failed"), (self.skipped, "skipped"),
                 (self.running, "running"), (self.other, "not started"))  # fmt: skip
        return [f"{number} {word}" for number, word in pairs if number]


def count_tasks(statuses: Iterable[str]) -> TaskCounts:
    """Count tasks by their reported status (``completed``, ``cached``, ``failed``,
    ``skipped``, ``running``; anything else is not started)."""
    counts = TaskCounts()
    for status in statuses:
        counts.total += 1
        field_name = status if status in COUNTED else "other"
        setattr(counts, field_name, getattr(counts, field_name) + 1)
    return counts


COUNTED = frozenset({"completed", "cached", "failed", "skipped", "running"})
DISABLED = "disabled (enabled: false)"


def reported_tasks(plan: Plan) -> Iterator[tuple[Task, bool]]:
    """``(task, enabled)`` for every task of the plan, disabled subtrees included: enabled
    children in run order, then disabled ones (as ``folpipe tree`` lists them)."""
    for node in plan.walk():
        yield plan.task(node.path), node.enabled


class RunTracker:
    """Collects task records during a run and notifies listeners (the live view).

    ``tasks`` may be ``(task, enabled)`` pairs (``reported_tasks``): a disabled task is
    reported ``skipped`` with the reason, so the run document has one entry per task in the
    tree.
    """

    def __init__(
        self, tasks: Iterable[Task | tuple[Task, bool]], listeners: Iterable[Listener] = ()
    ) -> None:
        self.records: dict[str, TaskRecord] = {}
        for item in tasks:
            task, enabled = item if isinstance(item, tuple) else (item, True)
            depth = task.path.count("/") + 1 if task.path else 0
            record = TaskRecord(task.path, task.name, task.kind, depth)
            if not enabled:
                record.status, record.error = "skipped", DISABLED
            self.records[task.path] = record
        self.listeners = list(listeners)
        self.passes: list[dict[str, Any]] = []
        """Every agent pass that ran in the flow's process (``compile.history.pass_entry``)."""

    def _emit(self, event: str, record: TaskRecord) -> None:
        for listener in self.listeners:
            try:
                listener(event, record)
            except Exception:  # a broken view must not break the run
                continue

    def start(self, path: str, iteration: int | None = None) -> None:
        record = self.records[path]
        record.status = "running"
        record.started = time.monotonic()
        record.current_iteration = iteration
        self._emit("start", record)

    def approved(self, path: str, record: dict[str, Any]) -> None:
        """A gate of the task at ``path`` (or of one of its tool calls) was answered."""
        found = self.records.get(path)
        if found is not None:
            found.approvals.append(record)

    def attempt(self, path: str, number: int) -> None:
        record = self.records[path]
        record.attempts += 1
        self._emit("attempt", record)

    def charge(self, path: str, payload: Mapping[str, Any]) -> None:
        """Add one executed (not cached) agent pass's usage."""
        record = self.records[path]
        usage = payload.get("usage") or {}
        record.model_calls += int(payload.get("model_calls") or 0)
        record.replayed_calls += int(payload.get("replayed_calls") or 0)
        record.tool_calls += int(payload.get("tool_calls") or 0)
        record.input_tokens += int(usage.get("input_tokens") or 0)
        record.output_tokens += int(usage.get("output_tokens") or 0)

    def finish(self, path: str, status: Status, *, error: str | None = None) -> None:
        record = self.records[path]
        if record.started is not None:
            record.duration_s += time.monotonic() - record.started
            record.started = None
        record.executions.append(status)
        record.status = status
        if status in ("failed", "skipped"):
            record.error = error or record.error
        else:
            record.error = None
        self._emit("finish", record)

    def iteration_started(self, path: str, number: int) -> None:
        """A loop starts iteration ``number`` (the live view shows it)."""
        record = self.records[path]
        record.current_iteration = number
        self._emit("iteration", record)

    def count_iteration(self, path: str) -> None:
        self.add_iterations(path, 1)

    def add_iterations(self, path: str, number: int) -> None:
        record = self.records[path]
        record.iterations = (record.iterations or 0) + number

    def skip_tree(self, task: Task, reason: str | None) -> None:
        """Mark a task and all its descendants skipped (``skip_if`` or a failed upstream)."""
        for node in task.walk():
            if node.path == task.path:
                self.finish(node.path, "skipped", error=reason)
            elif self.records[node.path].status == "pending":
                self.records[node.path].error = reason
                self._emit("finish", self.records[node.path])

    def fail_unstarted(self, task: Task, error: str) -> None:
        """``task`` failed before anything ran: it is failed, its subtree not run."""
        for node in task.walk():
            if node.path != task.path:
                self.finish(node.path, "skipped", error="not run: the workflow did not start")
        self.finish(task.path, "failed", error=error)

    def rows(self) -> list[dict[str, Any]]:
        return [record.to_dict() for record in self.records.values()]


@dataclass
class RunResult:
    """The outcome of one workflow run (``folpipe run --json``)."""

    status: Literal["completed", "failed"]
    context: dict[str, Any]
    tasks: list[dict[str, Any]]
    flow_run_id: str | None = None
    workflow: str = ""
    error: BaseException | None = None
    """The exception that failed the run (not part of the JSON document)."""
    costs: Any = None
    """The run's ``compile.costs.CostReport`` (the cost artifact; not part of the JSON)."""
    rerun: dict[str, Any] | None = None
    """A ``--from`` run: what re-ran, what was restored, spent and saved (``compile.history``)."""
    warnings: list[dict[str, Any]] = field(default_factory=list)
    """Store entries that failed their check (FP540) or could not be written (FP541)."""

    @property
    def durable(self) -> bool:
        """Everything the run meant to keep (checkpoints, journal entries) was written."""
        return not any(warning.get("code") == "FP541" for warning in self.warnings)

    @property
    def usage(self) -> dict[str, int]:
        total = {"input_tokens": 0, "output_tokens": 0, "model_calls": 0, "replayed_calls": 0}
        for row in self.tasks:  # rows of a hand-made result may leave usage out
            usage = row.get("usage") or {}
            total["input_tokens"] += usage.get("input_tokens", 0)
            total["output_tokens"] += usage.get("output_tokens", 0)
            total["model_calls"] += row.get("model_calls", 0)
            total["replayed_calls"] += row.get("replayed_calls", 0)
        return total

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def task(self, path: str) -> dict[str, Any]:
        """The entry of the task at ``path``."""
        for row in self.tasks:
            if row["path"] == path:
                return row
        raise KeyError(path)

    def reused(self) -> list[str]:
        """Paths of tasks whose checkpoint was reused."""
        return [row["path"] for row in self.tasks if row["status"] == "cached"]

    def to_dict(self) -> dict[str, Any]:
        document = {
            "status": self.status,
            "flow_run_id": self.flow_run_id,
            "context": self.context,
            "tasks": self.tasks,
            "usage": self.usage,
        }
        if self.rerun is not None:
            document["rerun"] = self.rerun
        if self.warnings:  # only when a store entry was refused or not written
            document["durable"] = self.durable
            document["warnings"] = self.warnings
        return document

    def counts(self) -> TaskCounts:
        """How its tasks ended (``count_tasks`` over the rows)."""
        return count_tasks(row["status"] for row in self.tasks)

    def to_json(self, *, indent: int | None = None) -> str:
        """The exact ``folpipe run --json`` document."""
        return json.dumps(self.to_dict(), indent=indent, default=repr)
