"""The plan (Prefect-free): golden plans of small folders, and what each view reads from it.

Regenerate the golden files after an intended change with ``FOLPIPE_UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.report._records import reported_tasks
from prefect_folpipe.plan import build_plan
from prefect_folpipe.plan._views import graph_to_dict, tree_to_dict
from prefect_folpipe.plan.execution import dag_plan
from prefect_folpipe.validate import load_workflow
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.graph import DagError, check_dag, find_cycle, simple_cycles
from prefect_folpipe.workflow.tree import EffectiveSettings, Task

PLANS = Path(__file__).parent.parent / "fixtures" / "plans"
FOLDERS = sorted(path.name for path in PLANS.iterdir() if (path / "task.yaml").is_file())


@pytest.mark.parametrize("name", FOLDERS)
def test_golden_plan(name: str) -> None:
    plan = build_plan(load_workflow(PLANS / name))
    golden = PLANS / f"{name}.plan.json"
    actual = json.dumps(plan.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("FOLPIPE_UPDATE_GOLDEN"):
        golden.write_text(actual, encoding="utf-8")
    assert actual == golden.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_plan_is_built_without_prefect() -> None:
    code = (
        "import sys\n"
        "from prefect_folpipe.plan._plan import build_plan\n"
        "from prefect_folpipe.validate import load_workflow\n"
        f"plan = build_plan(load_workflow({str(PLANS / 'report')!r}))\n"
        "plan.to_dict(); plan.to_text(); plan.to_mermaid()\n"
        "print(any(m == 'prefect' or m.startswith('prefect.') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_views_and_report_follow_the_plan_order() -> None:
    plan = build_plan(load_workflow(PLANS / "report"))
    order = [node.path for node in plan.walk()]
    assert order == [
        "",
        "gather",
        "gather/fetch_a",
        "gather/fetch_b",
        "gather/merge",
        "gather/old",
        "publish",
        "publish/charts",
        "publish/tables",
        "publish/send",
    ]
    assert [task.path for task, _ in reported_tasks(plan)] == order
    assert [node["path"] for node in graph_to_dict(plan)["nodes"]] == order
    tree = tree_to_dict(plan)
    assert [child["path"] for child in tree["children"][0]["children"]] == order[2:6]


def test_a_dependency_on_a_disabled_sibling_is_dropped_as_validate_says() -> None:
    plan = build_plan(load_workflow(PLANS / "report"))
    dag = plan.node("gather").dag
    assert dag is not None and dag.problem is None
    assert dict(dag.upstreams)["merge"] == ("fetch_a", "fetch_b")
    assert dict(dag.ancestors)["merge"] == ("fetch_a", "fetch_b")


def test_priority_groups_are_waves_and_a_loop_runs_one_child_per_wave() -> None:
    report = build_plan(load_workflow(PLANS / "report"))
    assert report.node("publish").waves == (
        ("publish/charts", "publish/tables"),
        ("publish/send",),
    )
    review = build_plan(load_workflow(PLANS / "review"))
    assert review.root.waves == (("draft",), ("check",))
    assert review.root.passes == ("first", "final")
    assert review.root.loop is not None and review.root.loop.timeout == 60


def test_the_dask_runner_is_planned_for_the_tasks_that_ask() -> None:
    plan = build_plan(load_workflow(PLANS / "scale"))
    assert plan.dask is not None and plan.dask.address is None and plan.dask.workers == 3
    assert plan.node("shards/shard_a").task_runner == "dask"
    assert plan.node("summary").task_runner == "default"
    assert plan.node("shards").branch_as == "subflow"
    assert build_plan(load_workflow(PLANS / "review")).dask is None


def _task(name: str, children: tuple[Task, ...] = (), **config: Any) -> Task:
    return Task(
        name=name,
        path=name,
        folder=Path("/wf") / name,
        config=TaskConfig(**config),
        settings=EffectiveSettings(),
        children=children,
    )


def test_broken_edges_are_recorded_not_raised() -> None:
    a = _task("a", depends_on=["b"])
    b = _task("b", depends_on=["a"])
    ghost = _task("c", depends_on=["ghost"])
    root = _task("r", (a, b, ghost), subtasks={"execution_type": "graph"})
    dag = dag_plan(root)
    assert dag.stages == {}
    assert "ghost" in (dag.problem or "")


def test_the_dag_helper() -> None:
    ups = {"a": (), "b": ("a",), "c": ("a", "b"), "d": ()}
    dag = check_dag(ups)
    assert dag.stages == {"a": 1, "b": 2, "c": 3, "d": 1}
    assert dag.ancestors == {"a": (), "b": ("a",), "c": ("a", "b"), "d": ()}
    cyclic = {"a": ("c",), "b": ("a",), "c": ("b",), "x": ("x",)}
    assert find_cycle(cyclic) in {("a", "c", "b", "a"), ("x", "x")}
    assert sorted(simple_cycles(cyclic)) == [("a", "c", "b", "a"), ("x", "x")]
    with pytest.raises(DagError, match="cycle") as excinfo:
        check_dag(cyclic)
    assert excinfo.value.cycle
    with pytest.raises(DagError, match="not a sibling") as excinfo:
        check_dag({"a": ("ghost",)})
    assert excinfo.value.unknown == "ghost"
