"""Diagnostics and the exception tree.

```
FolpipeError
├── WorkflowValidationError   author mistakes found before a run (carries every Diagnostic)
├── ConfigError               author mistake found at run time (e.g. no provider configured)
├── TaskError                 a task failed while running
│   ├── AgentError            the conversation could not finish
│   │   ├── MaxTurnsExceeded
│   │   └── OutputValidationError   bad structured output after every repair attempt
│   ├── MissingInputError     a required input key is absent
│   ├── HookError             a pre_run / post_run hook raised
│   └── BudgetExceeded        a token / cost budget would be exceeded
├── ToolError                 a tool failed (reported to the model, not raised, inside the loop)
│   └── SandboxViolation      a path or capability outside the task's grant
├── ProviderError             a model call failed; ``kind`` classifies it, ``retryable`` follows
└── WorkflowFailed            the run finished failed; carries the RunResult
```

``retryable`` is the single attribute the orchestrator reads to decide on retries: author
errors (validation, bad output after repair, sandbox violations, auth, bad requests) are never
retried. Every exception here pickles (Prefect persists failed states).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal


class Severity(StrEnum):
    """How serious a diagnostic is: errors block a run, warnings do not."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a workflow folder, with where it is and how to fix it."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None
    task: str | None = None
    hint: str | None = None
    severity: Severity = Severity.ERROR

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``folpipe validate --json`` (severity is implied by the list)."""
        data = asdict(self)
        data.pop("severity")
        return data

    def __str__(self) -> str:
        where = self.file or "<workflow>"
        if self.line:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.code} {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class FolpipeError(Exception):
    """Base of every error raised by prefect_folpipe: a message, a stable code and a hint.

    Each class has a default ``code``; ``code=`` gives one raise a more precise one.
    """

    code: str = "FP000"
    hint: str | None = None
    retryable: bool = False

    def __init__(self, message: str = "", *, code: str | None = None, hint: str | None = None):
        super().__init__(message)
        if code:
            self.code = code
        if hint is not None:
            self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[Exception], args: tuple[Any, ...], state: dict[str, Any]) -> Exception:
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    exc.__dict__.update(state)
    return exc


class WorkflowValidationError(FolpipeError):
    """The workflow folder has author mistakes; ``diagnostics`` lists every one of them."""

    code = "FP100"

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == Severity.ERROR]
        lines = "\n".join(f"  {d}" for d in errors)
        counted = "1 error" if len(errors) == 1 else f"{len(errors)} errors"
        super().__init__(f"workflow has {counted}:\n{lines}")


class ConfigError(FolpipeError):
    """An author mistake that can only be seen at run time."""

    code = "FP400"


class TaskError(FolpipeError):
    """A task failed while running."""

    code = "FP500"


class AgentError(TaskError):
    """The agent conversation could not produce a result."""

    code = "FP310"


class MaxTurnsExceeded(AgentError):
    """The model kept calling tools past ``settings.max_turns``."""

    code = "FP311"


class OutputValidationError(AgentError):
    """The final answer never matched the declared outputs; ``attempts`` keeps each try."""

    code = "FP312"

    def __init__(
        self, message: str, attempts: list[dict[str, Any]] | None = None, **coded: Any
    ) -> None:
        super().__init__(message, **coded)
        self.attempts = list(attempts or [])


class MissingInputError(TaskError):
    """A key declared in ``input.required`` is not in the context."""

    code = "FP313"


class HookError(TaskError):
    """A ``pre_run`` / ``post_run`` hook raised."""

    code = "FP314"


class BudgetExceeded(TaskError):
    """The next model call would exceed a token or cost budget."""

    code = "FP330"


class ToolError(FolpipeError):
    """A tool failed; inside the conversation loop this becomes an error result."""

    code = "FP200"


class SandboxViolation(ToolError):
    """A tool tried to reach outside what the task is allowed to touch."""

    code = "FP201"


ProviderErrorKind = Literal["rate_limit", "server_error", "timeout", "auth", "bad_request"]
RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limit", "server_error", "timeout"})


class ProviderError(FolpipeError):
    """A model call failed. ``kind`` classifies it; only some kinds are worth retrying."""

    code = "FP320"

    def __init__(
        self,
        message: str,
        *,
        kind: ProviderErrorKind = "server_error",
        provider: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.kind = kind
        self.provider = provider
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.kind in RETRYABLE_KINDS


class WorkflowFailed(FolpipeError):
    """The workflow run ended failed; ``result`` is the full RunResult."""

    code = "FP501"

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class InfrastructureError(FolpipeError):
    """The run could not complete because something outside the workflow failed: the Prefect
    API (unreachable FP520, erroring FP521, its temporary server not starting FP523) or a
    signal (FP522). Running again, or ``folpipe resume``, may succeed."""

    code = "FP520"
    retryable = True


class RunInterrupted(InfrastructureError):
    """A signal (SIGINT, SIGTERM) stopped the run; finished tasks are checkpointed."""

    code = "FP522"


def is_retryable(exc: BaseException) -> bool:
    """Whether an exception is worth another attempt: our own errors say so, others are."""
    if isinstance(exc, FolpipeError):
        return bool(exc.retryable)
    return True


def suggest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The choice closest to a misspelt ``word``, for a "did you mean" hint (or ``None``)."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=cutoff)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """``"did you mean 'x'?"`` for a misspelt ``word``, or ``None``."""
    close = suggest(word, choices, cutoff=cutoff)
    return f"did you mean {close!r}?" if close else None
