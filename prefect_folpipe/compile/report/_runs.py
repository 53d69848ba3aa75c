"""Run records under ``<workflow>/.folpipe/runs/`` (Prefect-free): what ``resume`` re-runs.

A record is written when a run starts (``status: running``, with the process that runs it) and
rewritten when it ends (``completed``, ``failed``, or ``interrupted`` by a signal). A run whose
process died without a word (SIGKILL, OOM, a power cut) keeps ``running``; the next run or
resume of the workflow sees that the process is gone and marks it ``crashed``. Writes are atomic
(a temporary file renamed over the record), so a kill never leaves half a record.

Records are signed like the result store's entries (``compile.storekey``: the same key and
HMAC, bound to the record's file name, which is the run's name for ``resume`` and ``diff``):
a record edited, copied under another name, or written without a tag (by hand, or by a
folpipe that did not sign records) is left out, with one FP540 warning naming it, and
never acted on: ``status``, ``resume``, ``diff`` and ``--from`` see it as absent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..._process.files import read_regular
from ..._process.stored import DamagedEntry, read_stored_file, warn_damaged
from ...workflow.tree import Workflow
from ..options import RunOptions
from ..storekey import ForgedEntry, StoreKeyError, sign_object, verified
from ._records import RunResult, RunTracker

LOG = logging.getLogger("prefect_folpipe.compile")
UNFINISHED = ("failed", "interrupted", "crashed")
"""Statuses of runs that did not complete: ``resume`` picks the latest of them."""
PROGRESS_EVERY_S = 1.0
"""How often a running run's record is rewritten with its tasks' statuses."""
RECORD_KIND = "run record"
"""What a run record's tag says it is (``compile.history`` signs its passes files too)."""
FORGED = "FP540"
_WARNED: set[tuple[str, int]] = set()
"""Records already warned about in this process (name, modification time)."""


def runs_dir(root_dir: Path) -> Path:
    return Path(root_dir) / ".folpipe" / "runs"


def _now() -> datetime:
    return datetime.now(UTC)


def _process_stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command's name (none when unreadable):
    ``[0]`` the state, ``[19]`` when it started."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat.rsplit(")", 1)[-1].split()


def _process_started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), to tell it from a reused pid."""
    return _started(_process_stat(pid))


def _started(fields: list[str]) -> str | None:
    return fields[19] if len(fields) > 19 else None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def this_process() -> dict[str, Any]:
    """Who runs a run: enough to tell later whether that process is still alive."""
    pid = os.getpid()
    return {
        "pid": pid,
        "host": socket.gethostname(),
        "boot_id": _boot_id(),
        "process_started": _process_started(pid),
    }


def process_alive(record: Mapping[str, Any]) -> bool | None:
    """Whether the process that ran ``record`` still runs (None: on another host, unknown)."""
    pid = record.get("pid")
    if not isinstance(pid, int) or record.get("host") != socket.gethostname():
        return None
    if record.get("boot_id") and record.get("boot_id") != _boot_id():
        return False  # the machine restarted since
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process holds the pid: compare start times
    fields = _process_stat(pid)
    if fields and fields[0] in ("Z", "X"):  # killed, not yet reaped (a container's PID 1
        return False  # that reaps no orphan keeps such a zombie for good)
    started = record.get("process_started")
    return started is None or started == _started(fields)


class RunRecord:
    """One run's record file, written at the start and at the end (never fails the run)."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def start(
        cls,
        workflow: Workflow,
        context: Mapping[str, Any] | None,
        options: RunOptions,
        flow_run_id: str | None,
        *,
        rerun_id: str = "",
        trace: str | None = None,
    ) -> RunRecord:
        """Record a run as it starts; ``rerun_id``: what keys its ``--from`` passes (a
        resume of it continues them); ``trace``: its trace's ``traceparent`` (a resume of
        it links its trace to this one)."""
        now = _now()
        data = {
            "status": "running",  # first: a reader can tell a record's status from its start
            "workflow": workflow.name,
            "flow_run_id": flow_run_id,
            "started_at": now.isoformat(),
            "finished_at": None,
            "context": dict(context or {}),
            "provider": options.provider,
            "replies": str(options.replies) if options.replies else None,
            "fresh": options.fresh,
            "reuse_checkpoints": options.across_runs,
            "lineage": options.lineage or flow_run_id,
            "resumed_from": options.resumed_from,
            "rerun_from": list(options.rerun_from),
            "rerun_id": rerun_id or None,
            "resumed_by": None,
            "error": None,
            "tasks": [],
            **this_process(),
        }
        if trace:
            data["trace"] = trace
        name = f"{now:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:6]}.json"
        record = cls(runs_dir(workflow.root_dir) / name, data)
        record.save()
        return record

    @property
    def name(self) -> str:
        return self.path.name

    def finish(self, result: RunResult, fields: Mapping[str, Any] | None = None) -> None:
        """The run ended: its status, error, per-task statuses, usage and cost, and
        ``fields`` (richer task rows, say), in one write."""
        error = _describe(result.error) if result.status == "failed" else None
        self.data["usage"] = result.usage
        self.data["cost_usd"] = result.costs.total_usd if result.costs is not None else None
        if not result.durable:  # a checkpoint or journal entry was not written (FP541)
            self.data["durable"] = False
        self.end(result.status, result.tasks, error, fields)
        if result.status == "completed" and self.data.get("resumed_from"):
            _mark_resumed(self.path.parent / str(self.data["resumed_from"]), self.name)
        prune_runs(self.path.parent)

    def end(
        self,
        status: str,
        tasks: list[dict[str, Any]],
        error: str | None,
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        self.data.update(
            status=status,
            finished_at=_now().isoformat(),
            error=error,
            tasks=[{"path": row["path"], "status": row["status"]} for row in tasks],
        )
        answered = [a for row in tasks for a in row.get("approvals") or ()]
        if answered:
            from .artifacts import approval_text

            self.data["approvals"] = [approval_text(a, target=True) for a in answered]
        self.data.update(fields or {})
        self.save()

    def save(self) -> None:
        write_record(self.path, self.data)

    def follow(self, tracker: RunTracker) -> None:
        """Keep the record's task statuses current while the run goes on (at most one write
        a second), so a run that dies says how far it got."""
        last = [time.monotonic()]

        def on_event(event: str, _record: Any) -> None:
            if event != "finish" or time.monotonic() - last[0] < PROGRESS_EVERY_S:
                return
            last[0] = time.monotonic()
            self.data["tasks"] = [
                {"path": path, "status": task.status} for path, task in tracker.records.items()
            ]
            self.save()

        tracker.listeners.append(on_event)


def _describe(error: BaseException | None) -> str | None:
    if error is None:
        return None
    code = getattr(error, "code", None)
    text = str(error).strip() or type(error).__name__
    return f"[{code}] {text}" if isinstance(code, str) else text


def write_record(path: Path, data: Mapping[str, Any], *, kind: str = RECORD_KIND) -> bool:
    """Sign and write ``data`` atomically; False (and a warning) when the folder is not
    writable or the store key cannot be had."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        text = json.dumps(signed(kind, path.name, data), indent=2)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except (OSError, StoreKeyError) as exc:
        LOG.warning("could not write %s %s: %s", kind, path, exc)
        with contextlib.suppress(OSError):  # nothing partial is left behind
            partial.unlink()
        return False
    return True


def signed(kind: str, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as JSON data, its keys in their order (``status`` first), and its tag, bound
    to the file ``name`` it is written as."""
    plain = json.loads(json.dumps(dict(data), default=repr))
    return sign_object(kind, name, plain)


def _mark_resumed(path: Path, by: str) -> None:
    data = read_record(path)
    if data is not None:
        data["resumed_by"] = by
        write_record(path, data)


def read_record(file: Path, *, kind: str = RECORD_KIND) -> dict[str, Any] | None:
    """A run record's data (``None``: unreadable, not JSON, not a record, or failing its
    signature: FP540, once per file and process)."""
    try:
        data = read_stored_file(file)
    except OSError:
        return None
    except DamagedEntry as exc:
        warn_damaged(LOG, f"{kind} {file.name}", exc, "it is left out")
        return None
    if not isinstance(data, dict):
        return None
    try:
        verified(kind, file.name, data)  # takes the tag out of ``data``
    except ForgedEntry as exc:
        _warn_forged(file, kind, exc)
        return None
    return data


def _warn_forged(file: Path, kind: str, exc: ForgedEntry) -> None:
    try:
        mark = (str(file), file.stat().st_mtime_ns)
    except OSError:
        mark = (str(file), 0)
    if mark in _WARNED:
        return
    _WARNED.add(mark)
    LOG.warning(
        "[%s] ignoring %s %s: %s; it is left out (status, resume and diff do not use it)",
        FORGED, kind, file, exc,
    )  # fmt: skip


def save_run_record(
    workflow: Workflow,
    result: RunResult,
    context: Mapping[str, Any] | None,
    options: RunOptions,
) -> Path | None:
    """Write a finished run's record in one go (a run that was not recorded as it started)."""
    record = RunRecord.start(workflow, context, options, result.flow_run_id)
    record.finish(result)
    return record.path if record.path.exists() else None


def list_runs(root_dir: Path, statuses: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every readable run record, oldest start first (each with its ``file``); only those
    with one of ``statuses`` when given (the others are told by their first bytes and not
    read: a run start looks for the few records still ``running`` among many finished)."""
    records = []
    for file in _record_files(runs_dir(root_dir)):
        if statuses is not None and peek_status(file) not in (*statuses, None):
            continue
        data = read_record(file)
        if data is not None and (statuses is None or data.get("status") in statuses):
            data["file"] = str(file)
            records.append(data)
    return records


def _record_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


_STATUS_HEAD = re.compile(rb'\A\{\s*"status":\s*"([a-z_]+)"')


def peek_status(file: Path) -> str | None:
    """A record's status from its first bytes (records are written status first); ``None``
    when they do not say (an older record, an unreadable file): read it whole."""
    try:
        head = read_regular(file, 64)
    except OSError:
        return None
    match = _STATUS_HEAD.match(head)
    return match.group(1).decode() if match else None


KEEP_RUNS = 200
"""Run records kept per workflow: the newest; older ones go when a run ends, except records
of runs still ``running``. Prefect keeps the flow runs' history; these are for ``resume``."""


def prune_runs(folder: Path, keep: int | None = None) -> int:
    """Delete the records older than the newest ``keep`` (default :data:`KEEP_RUNS`), never a
    ``running`` one; how many went."""
    keep = KEEP_RUNS if keep is None else keep
    removed = 0
    for file in _record_files(folder)[:-keep] if keep > 0 else []:
        status = peek_status(file) or (read_record(file) or {}).get("status")
        if status == "running":
            continue
        try:
            file.unlink()
            removed += 1
        except OSError:
            continue
    return removed


def settle_dead_runs(root_dir: Path) -> list[dict[str, Any]]:
    """Mark ``crashed`` every record still ``running`` whose process is gone; returns them."""
    crashed = []
    for record in list_runs(root_dir, statuses=("running",)):
        if process_alive(record) is not False:
            continue
        file = Path(record.pop("file"))
        died = f"the process running it (pid {record.get('pid')}) died before the run ended"
        record.update(status="crashed", error=record.get("error") or died)
        for row in record.get("tasks") or ():  # what was running then did not finish
            if isinstance(row, dict) and row.get("status") == "running":
                row.update(status="failed", error=row.get("error") or died)
        if write_record(file, record):
            crashed.append({**record, "file": str(file)})
    return crashed


def _inputs(record: Mapping[str, Any]) -> tuple[str, Any, Any]:
    return (
        json.dumps(record.get("context") or {}, sort_keys=True, default=repr),
        record.get("provider"),
        record.get("replies"),
    )


def resumable_run(root_dir: Path) -> dict[str, Any] | None:
    """The latest run that did not complete (failed, interrupted or crashed) or completed
    without being durable (a checkpoint not written, FP541), unless it was resumed to
    completion since, or a later run with the same inputs completed."""
    settle_dead_runs(root_dir)
    records = list_runs(root_dir)
    completed = set()
    for record in reversed(records):  # newest first
        status = record.get("status")
        lost = status == "completed" and record.get("durable") is False
        if status == "completed" and not lost:
            completed.add(_inputs(record))
        elif (
            (status in UNFINISHED or lost)
            and not record.get("resumed_by")
            and _inputs(record) not in completed
        ):
            return record
    return None


def last_failed_run(root_dir: Path) -> dict[str, Any] | None:
    """Former name of :func:`resumable_run`."""
    return resumable_run(root_dir)
