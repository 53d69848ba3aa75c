"""Markdown and table artifacts: one per task execution, one summary per run.

Rendering is Prefect-free; ``submit_*`` queue the artifacts for Prefect's API on the background
writer (a run does not wait for its reports). Text
goes through the tools package's redaction helper when it exists, so secrets that leaked into
tool output are masked before they reach the UI.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..._process.wording import plural
from ...redaction import redact as _redact
from ...workflow.names import slug
from ...workflow.tree import Task
from ._background import WRITER

LOG = logging.getLogger("prefect_folpipe.compile")
MAX_SECTION_CHARS = 8_000


def _clip(text: str) -> str:
    if len(text) <= MAX_SECTION_CHARS:
        return text
    return f"{text[:MAX_SECTION_CHARS]}\n… ({len(text) - MAX_SECTION_CHARS} more characters)"


def _fenced(value: Any, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside: model text cannot
    close it early and inject raw markdown / HTML into the artifact."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, default=repr)
    body = _clip(_redact(text))
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", body)), default=0))
    return f"{fence}{lang}\n{body}\n{fence}"


def _inline_code(value: Any) -> str:
    """``value`` as one line of inline code (a model-chosen tool name may hold anything)."""
    text = " ".join(str(value).split())[:200].replace("`", "'")
    return f"`{text}`"


def task_artifact_key(workflow_name: str, task: Task, phase: str) -> str:
    """``[a-z0-9-]`` key, stable across runs so the UI shows versions of the same artifact."""
    suffix = "" if phase == "single" else f"-{phase}"
    return slug(f"{workflow_name}-{task.path or 'root'}{suffix}", limit=90)


def summary_key(workflow_name: str) -> str:
    """Key of a run's summary table (``folpipe status`` reads its cost back)."""
    return slug(f"{workflow_name}-summary", limit=90)


def render_task(task: Task, label: str, payload: Mapping[str, Any]) -> str:
    """Markdown: instructions as sent, tool calls with results, the output, usage."""
    usage = payload.get("usage") or {}
    replayed = payload.get("replayed_calls") or 0
    replay_note = f" + {replayed} replayed from the journal (free)" if replayed else ""
    lines = [
        f"# {label}",
        "",
        f"provider `{payload.get('provider') or '-'}` · model `{payload.get('model') or '-'}` · "
        f"{plural(payload.get('model_calls', 0), 'model call')}{replay_note} · "
        f"{plural(payload.get('tool_calls', 0), 'tool call')} · "
        f"{usage.get('input_tokens', 0)} in / "
        f"{usage.get('output_tokens', 0)} out tokens",
        "",
        "## Instructions as sent",
        _fenced(payload.get("prompt") or task.system_prompt or "(none)", "markdown"),
    ]
    lines += _tool_calls(payload.get("tool_log") or ())
    lines += ["", "## Output", *_output(task, payload.get("delta") or {})]
    text = payload.get("text")
    if text:
        lines += ["", "## Final answer", _fenced(text, "")]
    return "\n".join(lines)


def _output(task: Task, delta: Mapping[str, Any]) -> list[str]:
    """What the pass added to the context, each key once: the copy of the declared outputs
    under the task's name is said in words, not repeated."""
    copied = delta.get(task.name)
    outputs = {key: value for key, value in delta.items() if key != task.name}
    if outputs and copied == outputs:
        keys = ", ".join(_inline_code(key) for key in outputs)
        note = f"{keys}: at the top of the context and under {_inline_code(task.name)}"
        return [note, _fenced(outputs, "json")]
    return [_fenced(dict(delta), "json")]


def render_failed_task(task: Task, label: str, error: BaseException, attempt: int) -> str:
    """Markdown of a failed pass: the error, the instructions as sent, each rejected answer
    with its validation errors, the tool calls it made."""
    from ...agent.result import report_of
    from ...plan.contextops import describe_error

    report = report_of(error)
    hint = getattr(error, "hint", None)
    lines = [
        f"# {label}: failed",
        "",
        f"attempt {attempt} · model `{report.get('model') or '-'}` · "
        f"{plural(report.get('model_calls', 0), 'model call')} · "
        f"{plural(report.get('tool_calls', 0), 'tool call')}",
        "",
        "## Error",
        _fenced(describe_error(error), ""),
    ]
    if hint:
        lines += ["", f"hint: {_redact(' '.join(str(hint).split()))}"]
    lines += [
        "",
        "## Instructions as sent",
        _fenced(report.get("system") or task.system_prompt or "(none)", "markdown"),
    ]
    rejected: Sequence[Mapping[str, Any]] = report.get("rejected") or ()
    if rejected:
        lines += ["", "## Rejected answers"]
        for number, answer in enumerate(rejected, 1):
            errors = "; ".join(map(str, answer.get("errors") or ())) or "rejected"
            lines += [f"### {number}. {_redact(errors)}", _fenced(answer.get("text", ""), "")]
    lines += _tool_calls(report.get("tool_log") or ())
    return "\n".join(lines)


def _tool_calls(tool_log: Sequence[Mapping[str, Any]]) -> list[str]:
    if not tool_log:
        return []
    lines = ["", "## Tool calls"]
    for number, call in enumerate(tool_log, 1):
        flag = " (error)" if call.get("is_error") else ""
        flag += " (replayed)" if call.get("replayed") else ""
        lines += [
            f"### {number}. {_inline_code(call.get('name'))}{flag}",
            _fenced(call.get("arguments") or {}, "json"),
        ]
        approval = call.get("approval")
        if isinstance(approval, Mapping):
            lines.append(f"approval: {_redact(approval_text(approval))}")
        lines.append(_fenced(call.get("result", ""), ""))
    return lines


SUMMARY_ERROR_CHARS = 26
"""A note cell's length in the summary table (code first): the task's report has it all."""
CODED = re.compile(r"^\w+ \[(FP\d+)\]: ")


def approval_text(record: Mapping[str, Any], *, target: bool = False) -> str:
    """One answered gate in a line: ``deploy: approved=false, reason=... (--approve, at ...)``."""
    answer = record.get("answer") or {}
    values = ", ".join(f"{key}={json.dumps(value)}" for key, value in answer.items())
    when = f", {record['answered_at']}" if record.get("answered_at") else ""
    who = f"{record.get('answered_by') or record.get('source') or '?'}{when}"
    head = f"{record.get('target')}: " if target and record.get("target") else ""
    return f"{head}{values} ({who})"


def approval_verdict(record: Mapping[str, Any]) -> str:
    """A gate's answer in a few words: ``declined by --approve``, ``approved by Prefect UI``."""
    answer = record.get("answer") or {}
    approved = answer.get("approved")
    verdict = "answered" if approved is None else "approved" if approved else "declined"
    return f"{verdict} by {record.get('answered_by') or record.get('source') or '?'}"


def summary_rows(rows: Sequence[Mapping[str, Any]], costs: Any = None) -> list[dict[str, Any]]:
    """The per-run table, narrow enough for the Prefect UI's artifact page at 1,400 px (the
    table gets about 800 of them beside the menu and the details): status (``cached``
    included), tries (attempts), model calls, tokens, seconds and a note per task: the start
    of its error, or what its approval gate was answered and by whom. ``iters`` (loop
    iterations), ``replayed`` (calls answered from the journal) and ``usd`` (cost) are
    columns only when a task has a value in them; the run document, the task's report and
    the cost artifact have the rest."""
    per_task = [(row, (costs.for_task(row["path"]) if costs is not None else None) or {})
                for row in rows]  # fmt: skip
    optional = {
        "iters": any(row["iterations"] is not None for row in rows),
        "replayed": any(row.get("replayed_calls") for row in rows),
        "usd": any(cost.get("cost_usd") for _, cost in per_task),
    }
    table = []
    for row, cost in per_task:
        cells = {
            "task": row["path"] or "(root)",
            "status": row["status"],
            "tries": row["attempts"],
            "iters": row["iterations"],
            "calls": row["model_calls"],
            "replayed": row.get("replayed_calls", 0),
            "tokens": row["usage"]["input_tokens"] + row["usage"]["output_tokens"],
            "usd": round(cost.get("cost_usd", 0.0), 6),
            "secs": round(row["duration_s"], 2),
            "note": _note(row),
        }
        table.append({key: value for key, value in cells.items() if optional.get(key, True)})
    return table


def _note(row: Mapping[str, Any]) -> str:
    """The error's start, else the last gate's answer in a few words."""
    answers = row.get("approvals") or ()
    if row.get("error") and not (answers and str(row["error"]).startswith("declined")):
        return _short_error(row["error"])
    return _redact(approval_verdict(answers[-1])) if answers else ""


def _short_error(error: str | None) -> str:
    if not error:
        return ""
    text = CODED.sub(r"\1 ", " ".join(_redact(error).split()))  # "FP312 the answer ..."
    return text if len(text) <= SUMMARY_ERROR_CHARS else text[: SUMMARY_ERROR_CHARS - 1] + "…"


def queue_task_artifact(
    workflow_name: str, task: Task, phase: str, label: str, outcome: Any, payload: Mapping
) -> None:
    """Queue the markdown artifact of one executed pass (rendered and written on the
    background writer)."""
    key, render, description = _task_report(workflow_name, task, phase, label, outcome, payload)
    _submit(key, "markdown", description, render, _task_run_id())


async def write_task_artifact(
    workflow_name: str, task: Task, phase: str, label: str, outcome: Any, payload: Mapping
) -> None:
    """Write the markdown artifact of one pass now (a Dask worker has no writer to flush)."""
    from prefect.client.orchestration import get_client

    key, render, description = _task_report(workflow_name, task, phase, label, outcome, payload)
    try:
        async with get_client() as client:
            await _write(key, "markdown", description, render, _task_run_id(), _flow_run_id())(
                client
            )
    except Exception as exc:  # reports never fail a run
        LOG.debug("artifact %s not written: %s", key, exc)


def queue_failure_artifact(
    workflow_name: str, task: Task, phase: str, label: str, error: BaseException, attempt: int
) -> None:
    """Queue the markdown artifact of a failed pass (same key as its successful runs: the
    UI shows the versions side by side)."""
    key = task_artifact_key(workflow_name, task, phase)
    render = lambda: render_failed_task(task, label, error, attempt)  # noqa: E731
    _submit(key, "markdown", f"folpipe task {label}: failed", render, _task_run_id())


async def write_failure_artifact(
    workflow_name: str, task: Task, phase: str, label: str, error: BaseException, attempt: int
) -> None:
    """Write a failed pass's artifact now (a Dask worker has no writer to flush)."""
    from prefect.client.orchestration import get_client

    key = task_artifact_key(workflow_name, task, phase)
    text = render_failed_task(task, label, error, attempt)
    write = _write(
        key, "markdown", f"folpipe task {label}: failed", lambda: text, _task_run_id(),
        _flow_run_id(),
    )  # fmt: skip
    try:
        async with get_client() as client:
            await write(client)
    except Exception as exc:  # reports never fail a run
        LOG.debug("artifact %s not written: %s", key, exc)


def _task_report(
    workflow_name: str, task: Task, phase: str, label: str, outcome: Any, payload: Mapping
) -> tuple[str, Callable[[], str], str]:
    view = {**payload, "prompt": getattr(outcome, "prompt", "")}
    view["tool_log"] = list(getattr(outcome, "tool_log", []) or [])
    key = task_artifact_key(workflow_name, task, phase)
    return key, lambda: render_task(task, label, view), f"folpipe task {label}"


def render_gate(label: str, declined: bool, message: str) -> str:
    """Markdown of a task its approval gate kept from running: what was answered, by whom."""
    what = "declined: the task did not run" if declined else "unanswered: the task failed"
    return "\n".join([f"# {label}: {what}", "", _fenced(message, "")])


def queue_gate_artifact(
    workflow_name: str, task: Task, label: str, declined: bool, message: str
) -> None:
    """Queue the report of a task its gate kept from running (the key of its own report)."""
    key = task_artifact_key(workflow_name, task, "single")
    state = "declined" if declined else "unanswered"
    render = lambda: render_gate(label, declined, message)  # noqa: E731
    _submit(key, "markdown", f"folpipe task {label}: {state}", render, _task_run_id())


def render_restored(label: str, entries: Sequence[Any]) -> str:
    """Markdown: every task a restored run brought back and the checkpoint it came from."""
    cached = [entry for entry in entries if entry.status == "cached"]
    lines = [
        f"# {label}",
        "",
        f"{plural(len(cached), 'pass')} restored from their checkpoints without running; "
        f"{len(entries) - len(cached)} skipped by `skip_if`, as in the run that wrote them.",
        "",
        "| task | status | checkpoint | stored at |",
        "|---|---|---|---|",
    ]
    for entry in entries:
        lines.append(
            f"| {_cell(entry.label)} | {entry.status} | {_cell(entry.key or '-')} | "
            f"{_cell(entry.where or '-')} |"
        )
    return "\n".join(lines)


def _cell(text: str) -> str:
    """A table cell of inline code (pipes and backticks cannot break the table)."""
    return _inline_code(text).replace("|", "\\|")


def queue_restored_artifact(
    workflow_name: str, group: str, label: str, entries: Sequence[Any]
) -> None:
    """Queue the markdown artifact of a run restoring tasks of ``group`` from checkpoints."""
    key = slug(f"{workflow_name}-{group or 'root'}-restored", limit=90)
    description = f"folpipe: {plural(len(entries), 'task')} restored from checkpoints"
    _submit(key, "markdown", description, lambda: render_restored(label, entries), _task_run_id())


def submit_summary(
    key: str, rows: Sequence[Mapping[str, Any]], description: str, costs: Any = None
) -> None:
    """Queue the run's summary table artifact."""
    table = json.dumps(summary_rows(rows, costs), default=str)  # Prefect stores JSON text
    _submit(key, "table", description, lambda: table)


def submit_cost(key: str, workflow_name: str, costs: Any) -> None:
    """Queue the run's cost artifact: per task, per model, budget headroom (markdown)."""
    from ._costs import render_markdown

    text = render_markdown(costs, workflow_name)
    _submit(
        key, "markdown", f"folpipe cost of {workflow_name}: ${costs.total_usd:.4f}", lambda: text
    )


def _submit(
    key: str, kind: str, description: str, data: Callable[[], str], task_run_id: Any = None
) -> None:
    """Queue one artifact of the current flow run for the background writer."""
    write = _write(key, kind, description, data, task_run_id, _flow_run_id())
    WRITER.submit(write, f"artifact {key}")


def _write(
    key: str,
    kind: str,
    description: str,
    data: Callable[[], str],
    task_run_id: Any,
    flow_run_id: Any,
) -> Callable[[Any], Any]:
    async def write(client: Any) -> None:
        from prefect.client.schemas.actions import ArtifactCreate

        artifact = ArtifactCreate(
            key=key,
            type=kind,
            description=description,
            data=data(),
            task_run_id=task_run_id,
            flow_run_id=flow_run_id,
        )
        await client.create_artifact(artifact=artifact)

    return write


def _task_run_id() -> Any:
    from prefect.context import TaskRunContext

    context = TaskRunContext.get()
    return context.task_run.id if context else None


def _flow_run_id() -> Any:
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return context.flow_run.id if context and context.flow_run else None
