"""Naming a recorded run on the command line (``folpipe diff``, ``folpipe test record``).

A run is named by its record's file name (with or without ``.json``, or a unique prefix), its
flow run id (or a unique prefix of it), ``latest`` (the newest finished run) or ``previous``
(the one before it). Unknown names are FP183.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..compile.report import list_runs, settle_dead_runs
from ..errors import ConfigError

FINISHED = ("completed", "failed", "interrupted", "crashed")


def finished_runs(root: Path) -> list[dict[str, Any]]:
    """The workflow's finished run records, oldest first (each with ``file`` and ``name``)."""
    settle_dead_runs(root)
    records = [r for r in list_runs(root) if r.get("status") in FINISHED]
    for record in records:
        record["name"] = Path(str(record["file"])).name
    return records


def find_run(root: Path, ref: str | None) -> dict[str, Any]:
    """The run record ``ref`` names (``None``: ``latest``)."""
    records = finished_runs(root)
    ref = (ref or "latest").strip()
    if not records:
        raise ConfigError(
            f"no finished run of the workflow at {root} is recorded",
            code="FP183",
            hint=f"run it first: folpipe run {root}",
        )
    if ref in ("latest", "previous"):
        index = -1 if ref == "latest" else -2
        if len(records) < -index:
            raise ConfigError(
                "there is no previous run: only one run is recorded",
                code="FP183",
                hint="run the workflow again, or name two runs",
            )
        return records[index]
    stem = ref.removesuffix(".json")
    matches = [
        r
        for r in records
        if r["name"].removesuffix(".json").startswith(stem)
        or str(r.get("flow_run_id") or "").startswith(ref)
    ]
    if len(matches) == 1:
        return matches[0]
    recent = ", ".join(r["name"].removesuffix(".json") for r in records[-3:])
    raise ConfigError(
        f"{'no' if not matches else 'more than one'} recorded run matches {ref!r}",
        code="FP183",
        hint=f"name a run by its record or flow run id (`folpipe status`), or latest / "
        f"previous; recent: {recent}",
    )
