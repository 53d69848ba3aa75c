"""folpipe status counts a retried run once per task, also when the retry restored finished
tasks from their checkpoints as one task run (issue 15's restore path); task runs read back
per task as the run document reports them (issue 30)."""

from __future__ import annotations

from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any
from uuid import uuid4

from builders import make_task

from prefect_folpipe.compile.report import count_tasks
from prefect_folpipe.deploy.status import latest_attempts
from prefect_folpipe.deploy.taskruns import task_path, task_statuses
from prefect_folpipe.workflow.names import restored_tag

FLOW = uuid4()
T0 = datetime(2026, 12, 2, 3, 0)


def run(name: str, state: str, kind: str, minute: int, flow: Any = FLOW) -> Any:
    return SimpleNamespace(
        id=uuid4(),
        flow_run_id=flow,
        name=name,
        tags=restore_tags(name),
        state=SimpleNamespace(name=state, type=SimpleNamespace(value=kind)),
        start_time=T0 + timedelta(minutes=minute),
        expected_start_time=None,
        created=None,
    )


def restore_tags(name: str) -> list[str]:
    """The tags the executor gives a restored task run: one per subtree it stands for."""
    if not name.endswith(" (restored from checkpoints)"):
        return []
    where, what = name.removesuffix(" (restored from checkpoints)").split(": ", 1)
    base = "" if where == "root" else where
    if what == "every task":
        return [restored_tag(base)]
    return [restored_tag(f"{base}/{n}" if base else n) for n in what.split(", ")]


FINAL = SimpleNamespace(is_final=lambda: True, type=SimpleNamespace(value="COMPLETED"))


def _tree() -> Any:
    research = make_task("research")
    draft = make_task("draft", "write/draft")
    write = make_task("write", children=[draft])
    return make_task("report", "", children=[research, write])


def test_a_retry_that_restored_a_task_counts_it_once_as_cached() -> None:
    runs = [
        run("research", "Completed", "COMPLETED", 0),
        run("write", "Crashed", "CRASHED", 1),
        run("write/draft[1]", "Crashed", "CRASHED", 1),
        run("root: research (restored from checkpoints)", "Cached", "COMPLETED", 5),
        run("write", "Completed", "COMPLETED", 6),
        run("write/draft[1]", "Completed", "COMPLETED", 6),
    ]
    statuses = task_statuses(runs, set(), _tree(), FINAL)
    assert statuses == {
        "": "completed",
        "research": "cached",
        "write": "completed",
        "write/draft": "completed",
    }
    counts = count_tasks(statuses.values())
    assert (counts.total, counts.cached, counts.completed, counts.failed) == (4, 1, 3, 0)
    assert counts.line() == "4 tasks: 3 ran, 1 from checkpoints"


def test_a_declined_gate_counts_as_skipped_and_a_fully_restored_tree_as_cached() -> None:
    runs = [
        run("root: every task (restored from checkpoints)", "Cached", "COMPLETED", 0),
    ]
    assert set(task_statuses(runs, set(), _tree(), FINAL).values()) == {"cached"}
    declined = [
        run("research", "Declined", "CANCELLED", 0),
        run("write", "Completed", "COMPLETED", 1),
        run("write/draft", "Completed", "COMPLETED", 1),
    ]
    statuses = task_statuses(declined, set(), _tree(), FINAL)
    assert statuses["research"] == "skipped" and statuses[""] == "completed"


def test_task_run_names_are_read_back_as_task_paths() -> None:
    assert task_path("write/draft[2]") == "write/draft"
    assert task_path("loop[1]/inner[3]") == "loop/inner"
    assert task_path("root (first pass)") == ""
    assert task_path("write (final pass)") == "write"


def test_every_task_restored_supersedes_the_whole_tree_but_not_other_flow_runs() -> None:
    other = uuid4()
    runs = [
        run("root (first pass)", "Completed", "COMPLETED", 0),
        run("research/market", "Completed", "COMPLETED", 1),
        run("research/market", "Completed", "COMPLETED", 1, flow=other),
        run("root: every task (restored from checkpoints)", "Cached", "COMPLETED", 5),
    ]
    kept = {(r.flow_run_id, r.name) for r in latest_attempts(runs, set())}
    assert kept == {
        (FLOW, "root: every task (restored from checkpoints)"),
        (other, "research/market"),
    }


def test_a_branch_restore_covers_only_its_own_children() -> None:
    runs = [
        run("research/market", "Completed", "COMPLETED", 0),
        run("research/marketing", "Completed", "COMPLETED", 0),
        run("research: market (restored from checkpoints)", "Cached", "COMPLETED", 5),
        run("research/market[1]", "Completed", "COMPLETED", 0),
    ]
    names = {r.name for r in latest_attempts(runs, set())}
    assert names == {"research/marketing", "research: market (restored from checkpoints)"}


def test_a_long_range_restore_is_read_from_its_tags_not_its_name() -> None:
    """A restore of many children names only the ends of the range; its tags name each."""
    names = [f"research/part{i}" for i in range(6)]
    runs = [run(name, "Completed", "COMPLETED", 0) for name in names]
    restore = run(
        "research: part0 … part5 (6 tasks) (restored from checkpoints)", "Cached", "COMPLETED", 5
    )
    restore.tags = [restored_tag(name) for name in names]
    kept = {r.name for r in latest_attempts([*runs, restore], set())}
    assert kept == {restore.name}
