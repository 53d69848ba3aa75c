"""What a run reports: per-task records, artifacts written in the background, costs, run
records under ``.folpipe/runs/`` and a task run's coalesced log.
"""

from __future__ import annotations

from ._background import END_HOLD_S, EXIT_FLUSH_S, WRITER, flush_artifacts
from ._costs import cost_report
from ._records import (
    RunResult,
    RunTracker,
    Status,
    TaskCounts,
    TaskRecord,
    count_tasks,
    reported_tasks,
)
from ._runs import (
    RunRecord,
    list_runs,
    read_record,
    resumable_run,
    runs_dir,
    settle_dead_runs,
    signed,
    write_record,
)
from ._tasklog import CoalescedLog

__all__ = [
    "END_HOLD_S",
    "EXIT_FLUSH_S",
    "WRITER",
    "CoalescedLog",
    "RunRecord",
    "RunResult",
    "RunTracker",
    "Status",
    "TaskCounts",
    "TaskRecord",
    "cost_report",
    "count_tasks",
    "flush_artifacts",
    "list_runs",
    "read_record",
    "reported_tasks",
    "resumable_run",
    "runs_dir",
    "settle_dead_runs",
    "signed",
    "write_record",
]
