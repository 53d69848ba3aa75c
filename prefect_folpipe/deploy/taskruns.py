"""A run's task runs read back per task: the latest attempt of each, restores expanded to the
tasks they stand for, and a status per task of the tree as the run document reports it.

``folpipe status`` counts a run from its run document (the summary artifact, or the run
record); this reading is for a run that has neither yet (still running, or killed), and lets
tests check that the task runs the UI shows agree with the document.

A retried flow run (the UI's Retry, ``folpipe resume`` through the API) holds the task runs of
every attempt: a killed attempt's task runs stay as they ended (``Crashed``, or ``Crashed`` by
the retry when they were left ``Running``) and are not counted; the latest attempt of each
task run name, or the restore that stood for it, is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from ..workflow.names import restored_paths
from ..workflow.tree import Task

ITERATION = re.compile(r"(\[\d+\])+$")
PASS = re.compile(r" \((first|final) pass\)$")


def latest_attempts(task_runs: list[Any], placeholders: set[UUID]) -> list[Any]:
    """One task run per (flow run, name): the latest attempt (a retried flow run holds the
    task runs of every attempt); subflow placeholders left out."""
    latest: dict[tuple[Any, str], Any] = {}
    for run in task_runs:
        if run.id in placeholders or run.state is None:
            continue
        key = (run.flow_run_id, run.name)
        if key not in latest or _when(run) >= _when(latest[key]):
            latest[key] = run
    restores = [
        (run, covered)
        for run in latest.values()
        if (covered := restored_paths(run.tags or ())) is not None
    ]
    return [run for run in latest.values() if not _superseded(run, restores)]


def _superseded(run: Any, restores: list[tuple[Any, list[str]]]) -> bool:
    """True when a later attempt of the same flow run restored this task from its checkpoint
    (a retried run then holds both; the UI's latest word on the task is the restore)."""
    for restore, covered in restores:
        if restore.flow_run_id != run.flow_run_id or restore is run:
            continue
        if _when(run) < _when(restore) and any(_under(run.name, p) for p in covered):
            return True
    return False


def _under(name: str, prefix: str) -> bool:
    """Whether task run ``name`` is the task ``prefix``, below it, or one of its passes or
    iterations (``""``: every task)."""
    if not prefix or name == prefix:
        return True
    return name.startswith((f"{prefix}/", f"{prefix}[", f"{prefix} "))


def _when(run: Any) -> Any:
    return run.start_time or run.expected_start_time or run.created


def task_path(name: str) -> str:
    """The task a task run name is of: ``write/draft[2]`` -> ``write/draft``, ``root (first
    pass)`` -> ``""``."""
    base = PASS.sub("", name)
    path = "/".join(ITERATION.sub("", part) for part in base.split("/"))
    return "" if path == "root" else path


def state_status(state: Any) -> str:
    """A task run's state as the run document says it."""
    kind = state.type.value
    if state.name == "Cached":
        return "cached"
    if kind == "COMPLETED":
        return "completed"
    if kind in ("FAILED", "CRASHED"):
        return "failed"
    if kind == "CANCELLED":
        return "skipped" if state.name == "Declined" else "failed"
    if kind == "RUNNING":
        return "running"
    return "pending"


def every_task(root: Task) -> list[Task]:
    """Every task of the tree, disabled ones too (the run document has a row for each)."""
    found = [root]
    for child in (*root.children, *root.disabled_children):
        found += every_task(child)
    return found


def task_statuses(
    task_runs: list[Any], placeholders: set[UUID], root: Task, run_state: Any
) -> dict[str, str]:
    """``{task path: status}`` for every task of the tree, read from its task runs: the
    latest attempt of each (a loop's iterations and a branch's passes settle as the run
    document does: a failed last one wins, then completed, then cached), restores standing
    for the tasks they cover, branches without a run of their own from their children, the
    root from the flow run's state; tasks without a run ``skipped`` once the flow run is
    final (the run document's word for a task that did not run), else ``pending``."""
    tasks = every_task(root)
    paths = [task.path for task in tasks]
    seen: dict[str, list[tuple[Any, str]]] = {}
    for run in sorted(latest_attempts(task_runs, placeholders), key=_when):
        status = state_status(run.state)
        covered = restored_paths(run.tags or ())
        owners = [task_path(run.name)] if covered is None else _covered(paths, covered)
        for path in owners:
            seen.setdefault(path, []).append((_when(run), status))
    final = run_state is not None and run_state.is_final()
    statuses: dict[str, str] = {}
    for task in reversed(tasks):  # children before their parents
        own = [status for _, status in seen.get(task.path, [])]
        below = [statuses[c.path] for c in task.children if c.path in statuses]
        statuses[task.path] = _settle(own, below, final, root=task is root, state=run_state)
    enabled = {task.path for task in root.walk()}
    for path in paths:  # a disabled subtree never runs
        if path not in enabled:
            statuses[path] = "skipped"
    return {path: statuses[path] for path in paths}


def _covered(paths: Iterable[str], covered: list[str]) -> list[str]:
    """The tasks a restore stands for: each covered task and everything below it."""
    return [path for path in paths if any(_under(path, c) for c in covered)]


def _settle(own: list[str], below: list[str], final: bool, *, root: bool, state: Any) -> str:
    if own:
        if own[-1] in ("failed", "running", "skipped"):
            return own[-1]
        for status in ("completed", "cached"):
            if status in own:
                return status
        return own[-1]
    if root and state is not None and state.type.value in ("FAILED", "CRASHED", "CANCELLED"):
        return "failed"
    if "failed" in below and not root:
        return "failed"
    if "running" in below:
        return "running"
    if "pending" in below and not final:
        return "pending"
    ran = [status for status in below if status not in ("skipped", "pending")]
    if ran:
        return "cached" if all(status == "cached" for status in ran) else "completed"
    return "skipped" if final else "pending"  # not run, as the run document says it
