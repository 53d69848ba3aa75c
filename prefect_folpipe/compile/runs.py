"""Run records under ``<workflow>/.folpipe/runs/`` (Prefect-free): what ``resume`` re-runs."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..workflow.tree import Workflow
from .options import RunOptions
from .report import RunResult

LOG = logging.getLogger("prefect_folpipe.compile")


def runs_dir(root_dir: Path) -> Path:
    return Path(root_dir) / ".folpipe" / "runs"


def save_run_record(
    workflow: Workflow,
    result: RunResult,
    context: Mapping[str, Any] | None,
    options: RunOptions,
) -> Path | None:
    """Write one run's record; never fails the run (a read-only folder just has no record)."""
    now = datetime.now(UTC)
    record = {
        "workflow": workflow.name,
        "status": result.status,
        "flow_run_id": result.flow_run_id,
        "finished_at": now.isoformat(),
        "context": dict(context or {}),
        "provider": options.provider,
        "replies": str(options.replies) if options.replies else None,
        "tasks": [{"path": row["path"], "status": row["status"]} for row in result.tasks],
        "usage": result.usage,
        "cost_usd": result.costs.total_usd if result.costs is not None else None,
    }
    target = runs_dir(workflow.root_dir) / f"{now:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:6]}.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(record, indent=2, default=repr), encoding="utf-8")
    except OSError as exc:
        LOG.warning("could not write run record %s: %s", target, exc)
        return None
    return target


def list_runs(root_dir: Path) -> list[dict[str, Any]]:
    """Every readable run record, oldest first (each with its ``file``)."""
    folder = runs_dir(root_dir)
    records = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        data["file"] = str(file)
        records.append(data)
    return records


def last_failed_run(root_dir: Path) -> dict[str, Any] | None:
    """The most recent run record, if that run failed (else ``None``)."""
    records = list_runs(root_dir)
    if not records or records[-1].get("status") != "failed":
        return None
    return records[-1]
