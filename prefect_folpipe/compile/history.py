"""What a run leaves to learn from (Prefect-free): per-task usage and the final context in its
run record, and each agent pass's conversation beside it.

* The run record (``.folpipe/runs/<run>.json``) gains, per task, its paid and replayed calls,
  tokens and cost, and the run's final context: ``folpipe diff`` compares two runs from them.
* ``.folpipe/runs/passes/<run>.json`` keeps every agent pass that ran: its system prompt, its
  conversation (every request and every answer) and its usage: ``folpipe test record``
  turns them into a test case. A task restored from a checkpoint made no call in that run: its
  passes are those of the latest earlier run that ran it.
* A ``--from`` run's report says how many tasks re-ran and how many were restored, what the
  re-run cost and what the restored tasks saved (their usage in the run that made them).

Everything written is masked through the redaction registry, the workflow's folder written as
``<workflow>``; the files are owner-only, like the checkpoints, and signed like the run
records (one that fails the check is left out, FP540).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._process.wording import plural
from ..providers.replay import Normalizer
from ..workflow.tree import Task, Workflow
from .report import RunResult, list_runs, read_record, runs_dir, signed
from .storekey import StoreKeyError

PASSES_DIR = "passes"
PASSES_KIND = "run passes"
"""What a passes file's tag says it is: signed like its run record (``compile.report``)."""


def pass_entry(task: Task, phase: str, scope: Sequence[int] | None, outcome: Any) -> dict:
    """One agent pass as the passes file keeps it (plain data)."""
    usage = getattr(outcome, "usage", None)
    return {
        "path": task.path,
        "phase": phase,
        "iteration": list(scope or ()),
        "system": getattr(outcome, "prompt", "") or "",
        "transcript": list(getattr(outcome, "transcript", None) or []),
        "model": getattr(outcome, "model", None),
        "provider": getattr(outcome, "provider", None),
        "model_calls": getattr(outcome, "model_calls", 0),
        "replayed_calls": getattr(outcome, "replayed_calls", 0),
        "usage": usage.to_dict() if hasattr(usage, "to_dict") else {},
        "cost": getattr(outcome, "cost", 0.0),
    }


def passes_file(root_dir: Path, record_name: str) -> Path:
    return runs_dir(root_dir) / PASSES_DIR / record_name


def task_rows(result: RunResult) -> list[dict[str, Any]]:
    """The record's per-task rows: status, calls, tokens and cost."""
    rows = []
    for row in result.tasks:
        cost = (result.costs.for_task(row["path"]) if result.costs is not None else None) or {}
        rows.append(
            {
                "path": row["path"],
                "status": row["status"],
                "model_calls": row.get("model_calls", 0),
                "replayed_calls": row.get("replayed_calls", 0),
                "tool_calls": row.get("tool_calls", 0),
                "usage": dict(row.get("usage") or {}),
                "cost_usd": round(float(cost.get("cost_usd") or 0.0), 6),
            }
        )
    return rows


def record_fields(workflow: Workflow, result: RunResult) -> dict[str, Any]:
    """What the run record keeps to learn from: the per-task rows, the final context and a
    ``--from`` run's report (written with the record's end: ``RunRecord.finish``)."""
    fields = {
        "tasks": task_rows(result),
        "final_context": Normalizer(Path(workflow.root_dir)).data(result.context),
    }
    if result.rerun is not None:
        fields["rerun"] = result.rerun
    return fields


def keep_passes(run: str, workflow: Workflow, passes: list[dict]) -> None:
    """Write the passes file of ``run`` (its record written already); never fails the run."""
    if passes:
        normal = Normalizer(Path(workflow.root_dir))
        data = {"run": run, "passes": normal.data(passes)}
        file = passes_file(workflow.root_dir, run)
        with contextlib.suppress(StoreKeyError):  # no key: the run says so (FP542)
            write_private(file, signed(PASSES_KIND, file.name, data))
    prune_passes(Path(workflow.root_dir))


def prune_passes(root_dir: Path) -> None:
    """Passes files go with their run records (``compile.runs.prune_runs``)."""
    folder = runs_dir(root_dir) / PASSES_DIR
    if not folder.is_dir():
        return
    for file in folder.glob("*.json"):
        if not (folder.parent / file.name).exists():
            with contextlib.suppress(OSError):
                file.unlink()


def write_private(path: Path, data: Any) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            # dumps, not dump: one call of the C encoder (dump writes piece by piece in Python)
            stream.write(json.dumps(data, ensure_ascii=False, default=repr))
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()


def read_passes(root_dir: Path, record_name: str) -> list[dict[str, Any]]:
    data = read_record(passes_file(root_dir, record_name), kind=PASSES_KIND)
    passes = data.get("passes") if data else None
    return [p for p in passes if isinstance(p, dict)] if isinstance(passes, list) else []


def _record_name(record: Mapping[str, Any]) -> str:
    return Path(str(record.get("file") or "")).name


def earlier_rows(root_dir: Path, before: str | None) -> dict[str, dict[str, Any]]:
    """Per task path, its row in the latest run record (older than ``before``) that ran it."""
    found: dict[str, dict[str, Any]] = {}
    for record in reversed(list_runs(root_dir)):
        if before is not None and _record_name(record) >= before:
            continue
        for row in record.get("tasks") or []:
            if isinstance(row, dict) and row.get("status") == "completed" and "usage" in row:
                found.setdefault(str(row.get("path")), row)
    return found


def rerun_report(
    workflow: Workflow, result: RunResult, names: Sequence[str], before: str | None
) -> dict[str, Any]:
    """What a ``--from`` run re-ran and restored, what it spent and what it saved."""
    agents = {task.path for task in workflow.tasks() if task.runs_agent or task.hooks}
    rows = [row for row in result.tasks if row["path"] in agents]
    rerun = [row["path"] for row in rows if row["status"] in ("completed", "failed")]
    restored = [row["path"] for row in rows if row["status"] == "cached"]
    earlier = earlier_rows(Path(workflow.root_dir), before)
    saved_calls = saved_tokens = 0
    saved_cost = 0.0
    for path in restored:
        row = earlier.get(path) or {}
        saved_calls += int(row.get("model_calls") or 0) + int(row.get("replayed_calls") or 0)
        usage = row.get("usage") or {}
        saved_tokens += int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
        saved_cost += float(row.get("cost_usd") or 0.0)
    usage = result.usage
    return {
        "from": list(names),
        "rerun": rerun,
        "restored": restored,
        "model_calls": usage["model_calls"],
        "cost_usd": result.costs.total_usd if result.costs is not None else 0.0,
        "saved_model_calls": saved_calls,
        "saved_tokens": saved_tokens,
        "saved_cost_usd": round(saved_cost, 6),
    }


def rerun_line(report: Mapping[str, Any]) -> str:
    """``--from draft: 2 tasks re-ran, 1 restored · 2 paid calls, $0.0000 · saved 1 call,
    $0.0000 against running everything``."""
    calls = report["saved_model_calls"]
    return (
        f"--from {', '.join(report['from'])}: {plural(len(report['rerun']), 'task')} re-ran, "
        f"{len(report['restored'])} from checkpoints · "
        f"{plural(report['model_calls'], 'paid call')}, ${report['cost_usd']:.4f} · "
        f"saved {plural(calls, 'call')}, {plural(report['saved_tokens'], 'token')}, "
        f"${report['saved_cost_usd']:.4f} against running everything"
    )
