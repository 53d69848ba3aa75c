"""The Prefect objects of a run: one leaf task per agent pass, one parent task or subflow per
branch, built once per run and picklable (a Dask task runner ships them with each submission).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from prefect import Flow
from prefect import Task as PrefectTask
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.logging import get_run_logger
from prefect.states import Cancelled, Completed, Failed

from .._process.wording import plural
from ..plan import Plan
from ..plan.contextops import unbox
from ..workflow.names import slug
from ..workflow.tree import Task
from .checkpoints import checkpoint_storage, flow_result_storage
from .leaf import LeafRef, ProcessLocal, leaf_task, task_options
from .report import WRITER, artifacts
from .shared import RunSpec
from .tags import RunTags, tag_task_run

ALL_CACHED = "every task below reused its checkpoint"
FLOW_NAME_FORBIDDEN = str.maketrans({c: "-" for c in "/%&><"})


def flow_name(text: str) -> str:
    """A Prefect flow name (no ``/ % & > <``)."""
    return text.translate(FLOW_NAME_FORBIDDEN).strip() or "folpipe"


class PrefectTasks:
    """Builds (once per run) the Prefect task of each pass and the runner of each branch."""

    def __init__(self, plan: Plan, tags: RunTags, *, storage: Any, workflow_name: str) -> None:
        self.plan = plan
        self.tags = tags
        self.storage = checkpoint_storage(storage)
        self.workflow_name = workflow_name
        self.spec: RunSpec | None = None
        self.runtime = ProcessLocal()
        self.executor = ProcessLocal()
        self._leaves: dict[tuple[str, str], PrefectTask[..., Any]] = {}
        self._branches: dict[str, Any] = {}
        self._restored: dict[str, PrefectTask[..., Any]] = {}
        self._gates: dict[str, PrefectTask[..., Any]] = {}
        self._options: dict[tuple[str, str], tuple[LeafRef, dict[str, Any]]] = {}

    def bind(self, spec: RunSpec, runtime: Any, executor: Any) -> None:
        """The run's spec (with its services) and the live objects the bodies call."""
        self.spec = spec
        self.runtime.value = runtime
        self.executor.value = executor

    def leaf(self, task: Task, phase: str) -> PrefectTask[..., Any]:
        """The Prefect task running one agent pass of ``task``."""
        key = (task.path, phase)
        built = self._leaves.get(key)
        if built is None:
            ref, options = self.leaf_options(task, phase)
            built = self._leaves[key] = leaf_task(ref, self.runtime, options)
        return built

    def leaf_options(self, task: Task, phase: str) -> tuple[LeafRef, dict[str, Any]]:
        """The reference and Prefect options of one pass's task (what restoring from
        checkpoints reads, without building the task)."""
        key = (task.path, phase)
        found = self._options.get(key)
        if found is None:
            assert self.spec is not None, "bind() the run first"
            creation = self.tags.at_creation(task)  # decides which tags go on late
            ref = LeafRef(self.spec, task.path, phase, tuple(self.tags.late(task)))
            options = task_options(
                task,
                self.plan.node(task.path),
                ref,
                self.runtime,
                tags=creation,
                storage=self.storage,
            )
            found = self._options[key] = (ref, options)
        return found

    def branch(self, task: Task) -> Any:
        """The parent task (``branch_as: task``) or subflow running a branch's children."""
        built = self._branches.get(task.path)
        if built is None:
            built = self._branches[task.path] = self._build_branch(task)
        return built

    def restored(self, group: Task) -> PrefectTask[..., Any]:
        """The task run showing children of ``group`` restored from checkpoints (state
        ``Cached``, an artifact listing each task and its checkpoint)."""
        built = self._restored.get(group.path)
        if built is None:
            creation = self.tags.at_creation(group, "restored")  # decides which go on late
            late = self.tags.late(group, "restored")
            built = self._restored[group.path] = PrefectTask(
                partial(show_restored, self.workflow_name, group.path, self.spec, late),
                name=f"{group.name} (restored)",
                task_run_name="{label}",
                cache_policy=NO_CACHE,
                persist_result=False,
                tags=creation,
            )
        return built

    def gate_outcome(self, task: Task) -> PrefectTask[..., Any]:
        """The task run of a task its approval gate kept from running: ``Declined`` (the
        answer made its ``skip_if`` skip it) or ``Unanswered`` (nobody answered in time),
        named as the task's own run would be, the answer and who gave it in its message."""
        built = self._gates.get(task.path)
        if built is None:
            creation = self.tags.at_creation(task, "approval")
            late = self.tags.late(task, "approval")
            built = self._gates[task.path] = PrefectTask(
                partial(show_gate, self.workflow_name, task, self.spec, late),
                name=f"{task.name} (approval)",
                task_run_name="{label}",
                cache_policy=NO_CACHE,
                persist_result=False,
                tags=creation,
            )
        return built

    def _build_branch(self, task: Task) -> Any:
        body = partial(run_branch, self.executor, task.path)
        body.__name__ = f"folpipe_branch_{slug(task.path, limit=40)}"  # type: ignore[attr-defined]
        if self.plan.node(task.path).branch_as == "subflow":
            return Flow(
                body,
                name=flow_name(f"{self.workflow_name}.{task.path.replace('/', '.')}"),
                flow_run_name="{label}",
                validate_parameters=False,
                persist_result=False,
                result_storage=flow_result_storage(self.storage),
            )
        return PrefectTask(
            body,
            name=f"{task.name} (branch)",
            task_run_name="{label}",
            cache_policy=NO_CACHE,
            persist_result=False,
            tags=self.tags.at_creation(task, "branch"),
        )


async def run_branch(
    live: ProcessLocal, path: str, context: Any, label: str, scope: list | None = None
) -> Any:
    """The body of a branch run (in the flow's process): its passes and children."""
    executor = live.value
    task = executor.plan.task(path)
    tag_task_run(TaskRunContext.get(), executor.tags.late(task, "branch"))
    outcome = await executor.execute_branch(task, unbox(context), scope)
    if outcome.status == "cached":  # every task below came from checkpoints: say so in the UI
        return Completed(name="Cached", message=ALL_CACHED, data=outcome)
    return outcome


async def show_restored(
    workflow_name: str,
    group: str,
    spec: Any,
    late_tags: list[str],
    label: str,
    entries: Any,
    covered: Any = None,
) -> Any:
    """The body of a restored run: its artifact (queued), then state ``Cached``; ``covered``:
    the ``folpipe-restored:<path>`` tags that go on now rather than at creation."""
    restored = unbox(entries)
    WRITER.touch()
    tag_task_run(TaskRunContext.get(), [*late_tags, *(unbox(covered) if covered else [])])
    if spec is None or spec.artifacts == "all":
        artifacts.queue_restored_artifact(workflow_name, group, label, restored)
    cached = sum(1 for entry in restored if entry.status == "cached")
    message = f"{plural(cached, 'pass')} restored from checkpoints, nothing ran"
    return Completed(name="Cached", message=message)


async def show_gate(
    workflow_name: str, task: Task, spec: Any, late_tags: list[str], label: str,
    declined: bool, message: str,
) -> Any:  # fmt: skip
    """The body of a gate's task run: the task's report (queued), then its state."""
    WRITER.touch()
    tag_task_run(TaskRunContext.get(), late_tags)
    if spec is None or spec.artifacts == "all":
        artifacts.queue_gate_artifact(workflow_name, task, label, declined, message)
    get_run_logger().info("%s", message)  # the task run's Logs tab says it in words
    if declined:
        return Cancelled(name="Declined", message=message)
    return Failed(name="Unanswered", message=message)
