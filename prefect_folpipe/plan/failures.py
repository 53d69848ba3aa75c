"""Run-time failures raised by the translator (codes FP4xx / FP5xx), Prefect-free and picklable."""

from __future__ import annotations

from ..errors import ConfigError, TaskError


class GroupFailed(TaskError):
    """A child of a branch failed and the branch's ``on_error`` made the branch fail."""

    code = "FP510"

    def __init__(self, message: str, *, task_path: str = "") -> None:
        super().__init__(message)
        self.task_path = task_path


class LoopExhausted(TaskError):
    """A loop reached ``max_iterations`` without its ``until`` condition becoming true."""

    code = "FP512"


class IterationTimeout(TaskError):
    """One loop iteration ran longer than ``subtasks.iteration_timeout``."""

    code = "FP513"


class LoopTimeout(TaskError):
    """A loop ran longer than its ``settings.timeout`` (the whole-loop budget)."""

    code = "FP514"


class ResultNotSerializable(TaskError):
    """A task's output cannot be stored as a JSON checkpoint."""

    code = "FP515"


class TaskTimedOut(TaskError):
    """A task attempt ran longer than ``settings.timeout``."""

    code = "FP516"


class DependencyError(ConfigError):
    """``depends_on`` names a missing sibling or forms a cycle (run-time guard)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, code="FP401", hint=hint)


class ApprovalFailed(TaskError):
    """An approval gate could not be answered (no terminal, no deployment, no preset) or its
    answer does not fit the declared form."""

    code = "FP530"


class ApprovalTimedOut(TaskError):
    """Nobody answered an approval gate within ``approval.timeout``."""

    code = "FP531"
