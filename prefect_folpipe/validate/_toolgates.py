"""Approval of tool calls: a tool's ``approval`` metadata (tools.md ``> approval:``,
``@tool(approval=...)``) is a checked block (FP166-FP168, FP172, FP409)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..loader import LoadResult
from ..workflow.toolapproval import parse_tool_approval

NOTIFY_HINT = (
    "name Prefect notification blocks: `notify: my-webhook`, `notify: slack-webhook/ops` or "
    "a list of them (create one with `prefect block create ...` or in the UI's Blocks page)"
)
CODES = {"input": "FP166", "prompt": "FP167", "timeout": "FP168", "notify": "FP409"}
HINTS = {
    "FP166": "write e.g. `input: {approved: bool, reason: str}` (types: str int float bool "
    "list dict, or a list of choices)",
    "FP167": "the prompt substitutes values only: {{ args.version }}, {{ context.release }}",
    "FP168": "write a duration such as 4h, 30m, 1h30m, 2d or 45 (seconds)",
    "FP409": NOTIFY_HINT,
    "FP172": "write `> approval: true` or `> approval: {prompt: ..., input: {approved: bool}, "
    "timeout: 4h, on_timeout: {approved: false}}`",
}


def check_tool_approvals(result: LoadResult) -> Iterator[Diagnostic]:
    """One diagnostic per tool whose ``approval`` metadata cannot be used (a tool seen by
    several tasks is reported once)."""
    seen: set[tuple[str, str]] = set()
    for task in result.all_tasks():
        for spec in task.tools:
            if "approval" not in spec.metadata or (spec.source_file, spec.name) in seen:
                continue
            seen.add((spec.source_file, spec.name))
            try:
                parse_tool_approval(spec.metadata["approval"])
            except ValueError as exc:
                code = CODES.get(getattr(exc, "key", ""), "FP172")
                part = getattr(exc, "key", "")
                where = f"approval.{part}" if part else "approval"
                yield Diagnostic(
                    code,
                    f"tool {spec.name!r}: {where} {exc}",
                    spec.source_file,
                    spec.line,
                    task.path,
                    HINTS[code],
                )
