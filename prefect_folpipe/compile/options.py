"""Per-run options of the translator (Prefect-free)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Runner = Callable[..., Awaitable[Any]]
"""Signature of ``agent.run_task``: ``(task, workflow, context, *, provider, phase, iteration,
logger, ledger) -> TaskOutcome``."""

ArtifactLevel = Literal["all", "summary", "none"]
RESULTS_ENV = "FOLPIPE_RESULTS_DIR"
ARTIFACTS_ENV = "FOLPIPE_ARTIFACTS"
TASK_TAGS_ENV = "FOLPIPE_TASK_TAGS"


@dataclass
class RunOptions:
    """How one run executes: provider override, checkpoints, artifacts, hooks for the CLI.

    ``runner`` defaults to the real ``agent.run_task``; tests may inject a stand-in.
    ``result_storage`` is a ``Path`` (default ``<workflow>/.folpipe/results``, or
    ``$FOLPIPE_RESULTS_DIR``) or any Prefect result-storage block.
    """

    provider: str | None = None
    replies: str | Path | None = None
    fresh: bool = False
    """Re-run every task: a new checkpoint lineage that also refreshes the shared checkpoints."""
    across_runs: bool | None = None
    """Reuse checkpoints of earlier runs; ``None``: ``settings.cache.across_runs``, else yes
    for local runs and no for deployment runs (``compile.scope``)."""
    rerun_from: tuple[str, ...] = ()
    """``--from``: ask these tasks (names or paths) and what runs after them again; restore
    the rest from checkpoints (``compile.rerun``)."""
    lineage: str | None = None
    """Continue the checkpoint lineage of this flow run id (``folpipe resume``)."""
    rerun_id: str | None = None
    """The ``--from`` run whose re-run passes this run continues (``folpipe resume`` of a
    ``--from`` run): it replays what that run's re-run passes paid for. ``None``: a new
    ``--from`` run, its re-run passes keyed on this run."""
    record: Path | None = None
    result_storage: Any = None
    artifacts: ArtifactLevel | None = None
    runner: Runner | None = None
    only: str | None = None
    """Run only the task at this path (``folpipe run-task``), in the workflow's context."""
    listeners: list[Callable[[str, Any], None]] = field(default_factory=list)
    """Called with ``(event, TaskRecord)`` on every state change (live progress view)."""
    keep_run_record: bool = True
    restore: bool = True
    """Restore children whose every pass has a checkpoint without a task run each (one
    ``Cached`` run per group shows them); ``False`` sends every pass through Prefect's own
    cache lookup (benchmarks compare the two)."""
    approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Answers to approval gates given ahead (``--approve``, test stubs): ``{task name or path,
    or "" for every gate: {input key: value}}``."""
    ask: Callable[[Any], Any] | None = None
    """Asks a person for a gate's answer (blocking; ``folpipe run`` in a terminal): called
    with a ``compile.approval.Question``, returns ``{input key: value}``."""
    resumed_from: str | None = None
    """The run record (file name) this run resumes (``folpipe resume``)."""
    interrupted: Any = None
    """Set by the run when a signal stops it: the ``RunResult`` of what ran so far."""
    task_tags: bool | None = None
    """Tag every leaf task run (``folpipe``, ``workflow:``, ``provider:``, ``model:``). Each
    tagged task run costs one concurrency-limit request to the API; default from
    ``$FOLPIPE_TASK_TAGS`` (``1``/``0``), else on."""

    def storage_for(self, root_dir: Path) -> Any:
        """The result storage to use: explicit, then the environment, then the default."""
        if self.result_storage is not None:
            if isinstance(self.result_storage, str):
                return Path(self.result_storage)
            return self.result_storage
        env = os.environ.get(RESULTS_ENV)
        if env:
            return Path(env)
        return root_dir / ".folpipe" / "results"

    def task_tags_enabled(self) -> bool:
        if self.task_tags is not None:
            return self.task_tags
        return os.environ.get(TASK_TAGS_ENV, "1").strip().lower() not in ("0", "false", "no")

    def artifact_level(self) -> ArtifactLevel:
        if self.artifacts is not None:
            return self.artifacts
        value = os.environ.get(ARTIFACTS_ENV, "all").strip().lower()
        return value if value in ("all", "summary", "none") else "all"  # type: ignore[return-value]
