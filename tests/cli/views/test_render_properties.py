"""Property tests: every view of any task tree covers each task once and never crashes."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefect_folpipe.cli.tree import explain_tool
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.plan._views import graph_to_dict, tree_to_dict
from prefect_folpipe.workflow import Task, Workflow

from ..cli_helpers import make_task, make_tool, workflow_around

pytestmark = pytest.mark.slow  # property runs, seconds each

EXECUTION_TYPES = ("parallel", "sequential", "graph", "loop", "priority_groups")
NAMES = st.text(alphabet=st.sampled_from('abcxyz_-"<>#[]() ·é'), min_size=1, max_size=8).filter(
    lambda name: name.strip() != ""
)


@st.composite
def trees(draw: st.DrawFn, depth: int = 0, path: str = "") -> Task:
    count = 0 if depth >= 3 else draw(st.integers(0, 4))
    names = draw(st.lists(NAMES, min_size=count, max_size=count, unique=True))
    children = [draw(trees(depth + 1, f"{path}/{name}" if path else name)) for name in names]
    enabled = [child for child in children if child.config.enabled]
    disabled = [child for child in children if not child.config.enabled]
    config: dict = {"enabled": depth == 0 or draw(st.booleans())}
    if children:
        kind = draw(st.sampled_from(EXECUTION_TYPES))
        config["subtasks"] = {"execution_type": kind}
        if kind == "loop":
            config["subtasks"].update(until="context.done == true", max_iterations=3)
    if depth and draw(st.booleans()):
        config["depends_on"] = draw(st.lists(NAMES, max_size=2))
    if draw(st.booleans()):
        config["conditions"] = {"skip_if": 'context["x"] == "<y>"'}
    tools = [make_tool("t" + str(depth), origin=draw(st.sampled_from(["own", "inherited"])))]
    return make_task(
        path.rsplit("/", 1)[-1] if path else "root",
        path,
        children=enabled,
        disabled=disabled,
        config=config,
        tools=tools,
        own_tools=tools[:1] if draw(st.booleans()) else [],
        instructions=draw(st.sampled_from([None, "Do it."])),
        priority=draw(st.integers(0, 99)),
    )


def _count(task: Task) -> int:
    return 1 + sum(_count(child) for child in (*task.children, *task.disabled_children))


def _json_nodes(node: dict) -> list[dict]:
    return [node, *(found for child in node["children"] for found in _json_nodes(child))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_every_view_covers_every_task_once(root: Task) -> None:
    workflow: Workflow = workflow_around(root)
    total = _count(root)
    plan = build_plan(workflow)
    nodes = _json_nodes(tree_to_dict(plan))
    assert len(nodes) == total
    assert len({node["path"] for node in nodes}) == total
    assert len(plan.to_text().splitlines()) == total
    assert len(explain_tool(workflow, "t1")) == total
    graph = graph_to_dict(plan)
    paths = [node["path"] for node in graph["nodes"]]
    assert len(paths) == total == len(set(paths))
    assert all(edge["from"] in paths and edge["to"] in paths for edge in graph["edges"])

    chart = plan.to_mermaid()
    assert chart.startswith("flowchart TD\n")
    definitions = re.findall(r'^\s*(?:subgraph )?(t\d+)\["([^"]*)"\]$', chart, re.MULTILINE)
    assert len(definitions) == total
    assert len({node for node, _ in definitions}) == total
    assert chart.count("subgraph ") == len(re.findall(r"^\s*end$", chart, re.MULTILINE))
