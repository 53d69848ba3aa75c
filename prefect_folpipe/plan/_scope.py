"""How far a run's checkpoints reach (Prefect-free): the checkpoint scope of one run.

* **Within one flow run's lineage checkpoints are always reused**: Prefect's task retries, the
  UI's Retry of a failed run (the same flow run), and ``folpipe resume`` (a new run continuing
  the lineage of the one it resumes).
* **Across runs they are reused by local runs**, the dev loop: ``folpipe run`` again after an
  edit re-runs only what changed.
* **Deployment runs** (schedules, the UI, ``prefect deployment run``) **re-run every task**
  unless the workflow says ``settings.cache: {across_runs: true}`` or the run's
  ``reuse_checkpoints`` parameter does: a nightly report must not replay last night's.

A task that does not reuse across runs keys its checkpoints on the run's lineage (the flow
run id it started under); one that does uses the shared content key. ``fresh`` starts a new
lineage and also refreshes the shared checkpoints later local runs read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..workflow.tree import EffectiveSettings, Task


@dataclass(frozen=True)
class CheckpointScope:
    """The checkpoint scope of one run (plain data: it travels to Dask workers)."""

    lineage: str = ""
    """The flow run id this run's checkpoints belong to (a resumed run: the first run's)."""
    deployment: bool = False
    """The run was created from a deployment (schedule, UI, API)."""
    across_runs: bool | None = None
    """The run's own choice (``reuse_checkpoints`` / ``RunOptions.across_runs``)."""
    fresh: bool = False
    rerun: frozenset[str] = frozenset()
    """Passes a ``--from`` run asks again (``compile.rerun``): ``path`` (every pass of the
    task) or ``path|final`` (only its final pass); like ``fresh``, but for them alone."""
    rerun_id: str = ""
    """What keys the re-run passes apart from every earlier run (this run's own id)."""

    def reruns(self, task: Task, phase: str = "single") -> bool:
        """Whether ``--from`` asks this pass again."""
        return bool(self.rerun) and (
            task.path in self.rerun or f"{task.path}|{phase}" in self.rerun
        )

    def renews(self, task: Task, phase: str = "single") -> bool:
        """The pass ignores earlier runs' checkpoints and answers (``fresh`` or ``--from``)."""
        return self.fresh or self.reruns(task, phase)

    def across(self, task: Task, phase: str = "single") -> bool:
        """Whether ``task`` reuses (and writes) the checkpoints shared between runs."""
        if self.renews(task, phase):
            return False
        return self.shared(task)

    def shared(self, task: Task) -> bool:
        """Whether ``task`` would reuse checkpoints across runs, ``fresh`` aside."""
        if self.across_runs is not None:
            return self.across_runs
        declared = task.settings.cache_across_runs
        if declared is not None:
            return declared
        return not self.deployment

    def salt(self, task: Task, phase: str = "single") -> str:
        """What the checkpoint key adds: nothing across runs, else the run's lineage (and,
        for a pass ``--from`` asks again, this run's id: not even its lineage's answer)."""
        if self.reruns(task, phase):
            return f"lineage:{self.lineage}|rerun:{self.rerun_id}"
        return "" if self.across(task, phase) else f"lineage:{self.lineage}"

    def refreshes_shared(self, task: Task, phase: str = "single") -> bool:
        """A fresh run (or a pass ``--from`` asks again) also rewrites the shared checkpoint
        that later runs reuse."""
        return self.renews(task, phase) and self.shared(task)

    def ttl(self, task: Task) -> float | None:
        """Seconds a shared checkpoint stays reusable (lineage ones never age)."""
        return task.settings.cache_expiration if self.shared(task) else None


def describe(settings: EffectiveSettings) -> str:
    """One line saying how far the checkpoints of tasks with ``settings`` reach."""
    if not settings.cache:
        return "checkpoints: off (settings.cache: false); every run re-runs every task"
    ttl = f", each for {_duration(settings.cache_expiration)}" if settings.cache_expiration else ""
    if settings.cache_across_runs is True:
        return (
            f"checkpoints: reused across runs, deployment and scheduled runs included{ttl} "
            "(--fresh, or the deployment's fresh parameter, re-runs)"
        )
    if settings.cache_across_runs is False:
        return (
            "checkpoints: reused only within a run (retries, Retry in the UI, folpipe resume); "
            "every new run re-runs every task"
        )
    return (
        f"checkpoints: local runs reuse them across runs{ttl} (--fresh to re-run); deployment "
        "and scheduled runs re-run every task and reuse them only within the run (retries, "
        "Retry in the UI, folpipe resume); settings.cache: {across_runs: true} opts in"
    )


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
