"""``folpipe graph``: the text graph and the Mermaid chart of a task tree."""

from __future__ import annotations

import re

from prefect_folpipe.plan import build_plan
from prefect_folpipe.plan._views import mermaid_text
from prefect_folpipe.plan.execution import dag_plan
from prefect_folpipe.workflow import Workflow

from ..cli_helpers import cv_pipeline, graph_workflow, make_task, workflow_around


def to_text_graph(workflow: Workflow) -> str:
    return build_plan(workflow).to_text()


def to_mermaid(workflow: Workflow) -> str:
    return build_plan(workflow).to_mermaid()


def _mermaid_ids(chart: str) -> dict[str, str]:
    """label (first word) -> node id, for nodes and subgraphs."""
    ids = {}
    for match in re.finditer(r'(?:subgraph )?(t\d+)\["([^"]*)"\]', chart):
        ids[match.group(2).split(" ")[0].split("<br/>")[0]] = match.group(1)
    return ids


def test_text_graph_shows_loop_bounds_and_order() -> None:
    text = to_text_graph(cv_pipeline())
    head, first, second = text.splitlines()
    assert head.startswith("cv_pipeline  (loop · until context.review_cv.approved == true")
    assert "max 5 iterations" in head
    assert "120s per iteration" in head
    assert "on max: fail" in head
    assert first == "├── 1. generate_cv"
    assert second == "└── 2. review_cv"


def test_text_graph_shows_dependencies_stages_and_disabled_children() -> None:
    lines = to_text_graph(graph_workflow()).splitlines()
    assert lines[0] == "report  (graph · max 2 at once)"
    assert lines[1] == "├── [stage 1] fetch_a"
    assert lines[2] == "├── [stage 1] fetch_b"
    assert lines[3] == "├── [stage 2] merge  [after fetch_a, fetch_b]"
    assert lines[4] == "└── old_step  [disabled]"


def test_dependency_stages_survive_a_cycle() -> None:
    a = make_task("a", "a", config={"depends_on": ["b"]})
    b = make_task("b", "b", config={"depends_on": ["a"]})
    root = make_task("r", "", children=[a, b], config={"subtasks": {"execution_type": "graph"}})
    assert dict(dag_plan(root).stages) == {}
    assert "cycle" in (dag_plan(root).problem or "")
    assert "[stage" not in to_text_graph(workflow_around(root))


def test_text_graph_nests_branches_and_groups_by_priority() -> None:
    leaf_a = make_task("charts", "report/charts", priority=10)
    leaf_b = make_task("summary", "report/summary", priority=10)
    leaf_c = make_task("publish", "report/publish", priority=20)
    report = make_task(
        "report",
        "report",
        children=[leaf_a, leaf_b, leaf_c],
        config={"subtasks": {"execution_type": "priority_groups"}},
    )
    fetch = make_task(
        "fetch", "fetch", config={"conditions": {"skip_if": "context.cached"}}, priority=5
    )
    root = make_task(
        "flow",
        "",
        instructions=None,
        children=[fetch, report],
        config={"subtasks": {"execution_type": "sequential"}},
    )
    assert to_text_graph(workflow_around(root)).splitlines() == [
        "flow  (sequential)",
        "├── 1. fetch  [skip if context.cached]",
        "└── 2. report  (priority_groups · agent: first + final pass)",
        "    ├── [group 10] charts",
        "    ├── [group 10] summary",
        "    └── [group 20] publish",
    ]


def test_structured_conditions_are_shown_compactly() -> None:
    condition = {"all": [{"key": "a.b", "equals": 1}, {"key": "c", "exists": True}]}
    leaf = make_task("x", "x", config={"conditions": {"skip_if": condition}})
    root = make_task("r", "", children=[leaf], instructions=None)
    assert "skip if all(a.b equals 1, c exists)" in to_text_graph(workflow_around(root))


def test_mermaid_loop_has_a_subgraph_order_edges_and_a_bounded_back_edge() -> None:
    chart = to_mermaid(cv_pipeline())
    assert chart.startswith("flowchart TD\n")
    ids = _mermaid_ids(chart)
    assert chart.count("subgraph ") == 1
    assert f"{ids['generate_cv']} --> {ids['review_cv']}" in chart
    assert f'{ids["review_cv"]} -.->|"next iteration (max 5)"| {ids["generate_cv"]}' in chart
    assert "until context.review_cv.approved == true" in chart


def test_mermaid_graph_draws_dependency_edges_and_marks_disabled_tasks() -> None:
    chart = to_mermaid(graph_workflow())
    ids = _mermaid_ids(chart)
    assert f"{ids['fetch_a']} --> {ids['merge']}" in chart
    assert f"{ids['fetch_b']} --> {ids['merge']}" in chart
    assert f"{ids['fetch_a']} --> {ids['fetch_b']}" not in chart
    assert f"class {ids['old_step']} disabled" in chart


def test_mermaid_nests_subgraphs_and_links_priority_groups() -> None:
    a = make_task("a", "g/a", priority=10)
    b = make_task("b", "g/b", priority=20)
    group = make_task(
        "g", "g", children=[a, b], config={"subtasks": {"execution_type": "priority_groups"}}
    )
    root = make_task("top", "", children=[group], instructions=None)
    chart = to_mermaid(workflow_around(root))
    ids = _mermaid_ids(chart)
    assert chart.count("subgraph ") == 2
    assert f"{ids['a']} --> {ids['b']}" in chart
    assert chart.count("end\n") == 2


def test_mermaid_single_task_workflow_is_one_node() -> None:
    chart = to_mermaid(workflow_around(make_task("solo", "")))
    assert chart == 'flowchart TD\n    t0["solo"]\n'


def test_mermaid_labels_are_escaped() -> None:
    assert mermaid_text('say "hi" <b> #1') == "say #quot;hi#quot; #lt;b#gt; #35;1"
    leaf = make_task("x", "x", config={"conditions": {"skip_if": "context['k'] == \"v\""}})
    chart = to_mermaid(workflow_around(make_task("r", "", children=[leaf])))
    assert '\\"' not in chart
    node_line = next(line for line in chart.splitlines() if "skip if" in line)
    assert node_line.count('"') == 2
