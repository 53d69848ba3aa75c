"""Approval gates: a typed form, a safe prompt template, a readable timeout, who is told
(FP166-FP169, FP172, FP409)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ..workflow.approval import input_fields, notify_names, parse_duration, template_problems
from ..workflow.toolapproval import default_answer
from ._common import at
from ._toolgates import NOTIFY_HINT, check_tool_approvals


def check_approvals(result: LoadResult) -> Iterator[Diagnostic]:
    """FP166 a bad `approval.input`; FP167 a prompt that is not a plain `{{ context.x }}`
    template; FP168 an unreadable `approval.timeout`; FP409 an `approval.notify` that names
    no notification block; FP169 (warning) checkpoints off in a
    workflow that pauses for approval (those tasks run again when it resumes)."""
    gated = []
    yield from check_tool_approvals(result)
    for task in result.all_tasks():
        approval = task.config.approval
        if approval is None:
            continue
        gated.append(task)
        try:
            notify_names(approval.notify)
        except ValueError as exc:
            yield at(result, task, "FP409", f"approval.notify {exc}", ("approval", "notify"),
                     NOTIFY_HINT)  # fmt: skip
        try:
            input_fields(approval.input)
        except ValueError as exc:
            yield at(
                result, task, "FP166", f"approval.input {exc}", ("approval", "input"),
                "write e.g. `input: {approved: bool, comment: str}` "
                "(types: str int float bool list dict, or a list of choices)",
            )  # fmt: skip
        for problem in template_problems(approval.prompt):
            yield at(
                result, task, "FP167", f"approval.prompt: {problem}", ("approval", "prompt"),
                "the prompt substitutes values only: {{ context.version }}, "
                "{{ context.items[0] }}, {{ context['key'] }}",
            )  # fmt: skip
        try:
            timeout = parse_duration(approval.timeout)
        except ValueError as exc:
            yield at(
                result, task, "FP168", f"approval.timeout {exc}", ("approval", "timeout"),
                "write a duration such as 72h, 30m, 1h30m, 2d or 45 (seconds)",
            )  # fmt: skip
            continue
        try:
            default_answer(input_fields(approval.input), approval.on_timeout, timeout)
        except ValueError as exc:
            yield at(
                result, task, "FP172", f"approval.on_timeout {exc}", ("approval", "on_timeout"),
                "give a timeout and an answer of the form, e.g. {approved: false}",
            )  # fmt: skip
    if gated:
        yield from _uncached(result, gated[0].path or "<root>")


def _uncached(result: LoadResult, gate: str) -> Iterator[Diagnostic]:
    for task in result.all_tasks():
        if task.runs_agent and not task.settings.cache:
            yield at(
                result, task, "FP169",
                f"checkpoints are off (settings.cache: false) in a workflow that pauses for "
                f"approval (at {gate!r}): this task runs again when the run resumes",
                ("settings", "cache"),
                "keep checkpoints on for tasks that run before an approval gate",
                Severity.WARNING,
            )  # fmt: skip
