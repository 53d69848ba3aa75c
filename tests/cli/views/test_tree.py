"""``folpipe tree``: the resolved tree as JSON nodes and as a rich tree with tool origins."""

from __future__ import annotations

from rich.console import Console

from prefect_folpipe.cli.tree import build_tree, changed_settings, explain_tool, tool_declarations
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.plan._views import tool_origin, tree_to_dict
from prefect_folpipe.workflow import EffectiveSettings, Task, Workflow

from ..cli_helpers import cv_pipeline, graph_workflow, make_task, make_tool, workflow_around


def workflow_to_dict(workflow: Workflow) -> dict:
    return tree_to_dict(build_plan(workflow))


def task_to_dict(root: Task) -> dict:
    return workflow_to_dict(workflow_around(root))


NODE_KEYS = {
    "name",
    "path",
    "kind",
    "execution_type",
    "priority",
    "enabled",
    "settings",
    "provider",
    "model",
    "tools",
    "children",
}


def _render(renderable: object) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(renderable)
    return console.export_text()


def _tooled_workflow():
    admin = make_tool("admin_api", origin="inherited", owner="")
    search = make_tool("search", origin="inherited", owner="manager")
    fmt = make_tool("format_results", origin="shared", owner="<shared>")
    own = make_tool("dump", origin="own", owner="manager/worker")
    worker = make_task(
        "worker",
        "manager/worker",
        tools=[own, fmt, search],
        provider=("claude", "claude-sonnet-4-5"),
        settings=EffectiveSettings(max_retries=5, timeout=30.0),
        config={"description": "Does the work."},
    )
    manager = make_task(
        "manager",
        "manager",
        children=[worker],
        tools=[make_tool("search", owner="manager"), admin],
        provider=("claude", "claude-sonnet-4-5"),
    )
    root = make_task(
        "flow",
        "",
        instructions=None,
        children=[manager],
        tools=[make_tool("admin_api", owner="")],
        config={"subtasks": {"execution_type": "sequential"}},
    )
    return workflow_around(root)


def test_json_nodes_have_exactly_the_contract_keys() -> None:
    data = workflow_to_dict(_tooled_workflow())

    def check(node: dict) -> None:
        assert set(node) == NODE_KEYS
        for child in node["children"]:
            check(child)

    check(data)
    worker = data["children"][0]["children"][0]
    assert worker["path"] == "manager/worker"
    assert worker["kind"] == "leaf"
    assert worker["execution_type"] is None
    assert worker["provider"] == "claude"
    assert worker["model"] == "claude-sonnet-4-5"
    assert worker["tools"] == ["dump", "format_results", "search"]
    assert worker["settings"]["max_retries"] == 5
    assert worker["settings"]["timeout"] == 30.0
    assert data["kind"] == "branch"
    assert data["execution_type"] == "sequential"
    assert data["children"][0]["kind"] == "both"


def test_json_lists_disabled_children_with_enabled_false() -> None:
    data = workflow_to_dict(graph_workflow())
    assert [child["name"] for child in data["children"]] == [
        "fetch_a",
        "fetch_b",
        "merge",
        "old_step",
    ]
    assert [child["enabled"] for child in data["children"]] == [True, True, True, False]


def test_descendants_of_a_disabled_task_are_disabled_too() -> None:
    grandchild = make_task("inner", "outer/inner")
    outer = make_task("outer", "outer", children=[grandchild], config={"enabled": False})
    root = make_task("r", "", disabled=[outer])
    node = task_to_dict(root)["children"][0]
    assert node["enabled"] is False
    assert node["children"][0]["enabled"] is False


def test_tool_origins_name_the_ancestor() -> None:
    assert tool_origin(make_tool("a")) == "own"
    assert tool_origin(make_tool("a", origin="shared", owner="<shared>")) == "from shared/tools.md"
    assert tool_origin(make_tool("a", origin="inherited", owner="x/y")) == "inherited from x/y"
    assert (
        tool_origin(make_tool("a", origin="inherited"), root_name="flow") == "inherited from flow"
    )


def test_human_tree_shows_tools_with_origins_provider_and_changed_settings() -> None:
    text = _render(build_tree(_tooled_workflow()))
    assert "flow  branch · sequential · priority 50" in text
    assert "manager  both · parallel · priority 50 · claude (claude-sonnet-4-5)" in text
    assert "tools: search (own), admin_api (inherited from flow)" in text
    assert (
        "tools: dump (own), format_results (from shared/tools.md), search (inherited from manager)"
        in text
    )
    assert "overrides: max_retries=5, timeout=30.0" in text
    assert "Does the work." in text
    assert "max_turns" not in text


def test_human_tree_all_settings_and_disabled_marker() -> None:
    text = _render(build_tree(graph_workflow(), full=True))
    assert "old_step  leaf · priority 90 · no provider  disabled" in text
    assert "max_turns=20" in text
    assert "no provider" in text


def test_changed_settings_is_empty_for_defaults() -> None:
    task = make_task("t", "t")
    assert changed_settings(task) == {}
    assert changed_settings(task, full=True) == EffectiveSettings().as_dict()


def test_changed_settings_of_a_child_are_what_differs_from_its_parent() -> None:
    parent = make_task("p", "p", settings=EffectiveSettings(max_retries=3, timeout=300.0))
    same = make_task("c", "p/c", settings=EffectiveSettings(max_retries=3, timeout=300.0))
    faster = make_task("d", "p/d", settings=EffectiveSettings(max_retries=3, timeout=30.0))
    assert changed_settings(parent) == {"max_retries": 3, "timeout": 300.0}
    assert changed_settings(same, parent) == {}
    assert changed_settings(faster, parent) == {"timeout": 30.0}


def test_loop_root_kind_and_execution_type() -> None:
    data = workflow_to_dict(cv_pipeline())
    assert (data["kind"], data["execution_type"]) == ("branch", "loop")
    assert [child["name"] for child in data["children"]] == ["generate_cv", "review_cv"]


def _explain_case(config: dict, *, depth_two: bool = False) -> str:
    """Reason why ``leaf`` does not get ``api``, declared by the root, under ``config``."""
    api = make_tool("api", owner="")
    leaf = make_task("leaf", "mid/leaf", config=config)
    mid = make_task("mid", "mid", children=[leaf], tools=[make_tool("api", origin="inherited")])
    other = make_task("other", "other", own_tools=[make_tool("solo", owner="other")])
    root = make_task("root", "", children=[mid, other], own_tools=[api], tools=[api])
    rows = {row.task.path: row for row in explain_tool(workflow_around(root), "api")}
    assert rows["mid"].visible and rows["mid"].reason == "inherited from root"
    assert not rows["mid/leaf"].visible
    return rows["mid/leaf"].reason


def test_explain_names_the_rule_that_filtered_a_tool_out() -> None:
    assert _explain_case({"inherit_tools": False}) == "inherit_tools: false (declared by root)"
    assert _explain_case({"inherit_tools_depth": 1}) == (
        "root is 2 levels up but inherit_tools_depth is 1"
    )
    assert _explain_case({"inherit_tools": ["other"]}) == (
        "not in this task's inherit_tools list (declared by root)"
    )
    assert _explain_case({"exclude_tools": ["api"]}) == (
        "listed in this task's exclude_tools (declared by root)"
    )


def test_explain_a_tool_declared_outside_the_lineage() -> None:
    leaf = make_task("leaf", "a/leaf")
    a = make_task("a", "a", children=[leaf])
    other = make_task("other", "other", own_tools=[make_tool("solo", owner="other")])
    root = make_task("root", "", children=[a, other])
    workflow = workflow_around(root)
    assert tool_declarations(workflow) == {"solo": ["other"]}
    rows = {row.task.path: row for row in explain_tool(workflow, "solo")}
    assert rows["a/leaf"].reason == "declared only by other, not an ancestor"


def test_a_task_whose_children_are_all_disabled_runs_as_a_leaf() -> None:
    off = make_task("off", "p/off", config={"enabled": False})
    parent = make_task("p", "p", disabled=[off], config={"subtasks": {"execution_type": "loop"}})
    node = task_to_dict(make_task("r", "", children=[parent]))["children"][0]
    assert (node["kind"], node["execution_type"]) == ("leaf", None)
    assert [child["enabled"] for child in node["children"]] == [False]
