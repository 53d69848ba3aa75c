"""Tool scoping: own > shared > inherited, scope local, block_tools, whitelist, blacklist, depth."""

from __future__ import annotations

from typing import Any

import pytest

from prefect_folpipe.errors import Severity
from prefect_folpipe.loader.inheritance import resolve_tools
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import ToolSpec


def spec(name: str, *, owner: str = "", scope: str = "shared", kind: str = "reference") -> ToolSpec:
    return ToolSpec(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        description=f"{name} of {owner or 'root'}",
        parameters={"type": "object", "properties": {}},
        source_file=f"/w/{owner}/tools.md",
        scope=scope,  # type: ignore[arg-type]
        owner=owner,
    )


def cfg(**kwargs: Any) -> TaskConfig:
    return TaskConfig(**kwargs)


def names(tools: tuple[ToolSpec, ...]) -> list[str]:
    return [t.name for t in tools]


def resolve(lineage, shared=()):
    return resolve_tools(lineage, list(shared))


def test_root_sees_only_its_own_tools() -> None:
    tools, diagnostics = resolve([("", cfg(), (spec("a"),))])
    assert names(tools) == ["a"]
    assert tools[0].origin == "own" and tools[0].owner == ""
    assert diagnostics == []


def test_empty_lineage() -> None:
    assert resolve([]) == ((), [])


def test_inherits_from_every_ancestor_by_default_with_origin_and_owner() -> None:
    lineage = [
        ("", cfg(), (spec("root_tool"),)),
        ("mid", cfg(), (spec("mid_tool", owner="mid"),)),
        ("mid/leaf", cfg(), (spec("leaf_tool", owner="mid/leaf"),)),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == ["leaf_tool", "mid_tool", "root_tool"]
    assert [(t.origin, t.owner) for t in tools] == [
        ("own", "mid/leaf"),
        ("inherited", "mid"),
        ("inherited", ""),
    ]


def test_nearest_ancestor_wins_and_own_beats_inherited() -> None:
    lineage = [
        ("", cfg(), (spec("x"), spec("y"))),
        ("mid", cfg(), (spec("x", owner="mid"),)),
        ("mid/leaf", cfg(), (spec("y", owner="mid/leaf"),)),
    ]
    tools, _ = resolve(lineage)
    by_name = {t.name: t for t in tools}
    assert by_name["x"].owner == "mid" and by_name["x"].origin == "inherited"
    assert by_name["y"].owner == "mid/leaf" and by_name["y"].origin == "own"


def test_scope_local_is_never_inherited_but_usable_by_its_owner() -> None:
    lineage = [
        ("", cfg(), (spec("dangerous_delete", scope="local"), spec("ok"))),
        ("child", cfg(), ()),
    ]
    root_tools, _ = resolve(lineage[:1])
    child_tools, _ = resolve(lineage)
    assert names(root_tools) == ["dangerous_delete", "ok"]
    assert names(child_tools) == ["ok"]


def test_spec_example_manager_blocks_admin_api() -> None:
    root = ("", cfg(), (spec("admin_api"),))
    manager = ("manager", cfg(block_tools=["admin_api"]), ())
    worker = ("manager/worker", cfg(), ())
    manager_tools, _ = resolve([root, manager])
    worker_tools, _ = resolve([root, manager, worker])
    assert names(manager_tools) == ["admin_api"]  # manager CAN use it
    assert names(worker_tools) == []  # worker cannot see it


def test_block_tools_blocks_the_blocking_tasks_own_tools_from_children() -> None:
    manager = ("manager", cfg(block_tools=["secret_op"]), (spec("secret_op", owner="manager"),))
    worker = ("manager/worker", cfg(), ())
    manager_tools, _ = resolve([("", cfg(), ()), manager])
    worker_tools, _ = resolve([("", cfg(), ()), manager, worker])
    assert names(manager_tools) == ["secret_op"]
    assert names(worker_tools) == []


def test_block_applies_to_all_deeper_descendants() -> None:
    lineage = [
        ("", cfg(), (spec("admin_api"),)),
        ("a", cfg(block_tools=["admin_api"]), ()),
        ("a/b", cfg(), ()),
        ("a/b/c", cfg(), ()),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == []


def test_block_of_a_deeper_ancestor_does_not_hide_a_nearer_definition() -> None:
    # root blocks x from its children; mid defines its own x, which reaches leaf.
    lineage = [
        ("", cfg(block_tools=["x"]), (spec("x"),)),
        ("mid", cfg(), (spec("x", owner="mid"),)),
        ("mid/leaf", cfg(), ()),
    ]
    tools, _ = resolve(lineage)
    assert [(t.name, t.owner) for t in tools] == [("x", "mid")]


def test_blocked_task_may_define_its_own_tool_with_that_name() -> None:
    lineage = [
        ("", cfg(), (spec("admin_api"),)),
        ("manager", cfg(block_tools=["admin_api"]), ()),
        ("manager/worker", cfg(), (spec("admin_api", owner="manager/worker"),)),
    ]
    tools, _ = resolve(lineage)
    assert [(t.name, t.origin) for t in tools] == [("admin_api", "own")]


def test_inherit_tools_false_disables_inheritance() -> None:
    lineage = [("", cfg(), (spec("a"),)), ("c", cfg(inherit_tools=False), (spec("own"),))]
    tools, diagnostics = resolve(lineage)
    assert names(tools) == ["own"]
    assert diagnostics == []


def test_inherit_tools_whitelist() -> None:
    lineage = [
        ("", cfg(), (spec("search_api"), spec("format_results"), spec("other"))),
        ("c", cfg(inherit_tools=["search_api", "format_results"]), ()),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == ["search_api", "format_results"]


def test_exclude_tools_blacklist() -> None:
    lineage = [
        ("", cfg(), (spec("dangerous_delete"), spec("ok"))),
        ("c", cfg(exclude_tools=["dangerous_delete"]), ()),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == ["ok"]


def test_whitelist_and_blacklist_combine() -> None:
    lineage = [
        ("", cfg(), (spec("a"), spec("b"), spec("c"))),
        ("t", cfg(inherit_tools=["a", "b"], exclude_tools=["b"]), ()),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == ["a"]


def test_whitelist_and_blacklist_only_touch_inherited_tools() -> None:
    lineage = [
        ("", cfg(), (spec("a"),)),
        ("t", cfg(inherit_tools=["a"], exclude_tools=["mine", "a"]), (spec("mine", owner="t"),)),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == ["mine"]


def test_whitelist_cannot_resurrect_a_blocked_or_local_tool() -> None:
    lineage = [
        ("", cfg(), (spec("blocked"), spec("local", scope="local"))),
        ("mid", cfg(block_tools=["blocked"]), ()),
        ("mid/leaf", cfg(inherit_tools=["blocked", "local"]), ()),
    ]
    tools, diagnostics = resolve(lineage)
    assert names(tools) == []
    assert [d.code for d in diagnostics] == ["FP221"]  # "local" is never inheritable


@pytest.mark.parametrize(
    ("depth", "expected"),
    [(-1, ["parent_t", "grand_t", "root_t"]), (1, ["parent_t"]), (2, ["parent_t", "grand_t"])],
)
def test_inherit_tools_depth(depth: int, expected: list[str]) -> None:
    lineage = [
        ("", cfg(), (spec("root_t"),)),
        ("g", cfg(), (spec("grand_t", owner="g"),)),
        ("g/p", cfg(), (spec("parent_t", owner="g/p"),)),
        ("g/p/me", cfg(inherit_tools_depth=depth), ()),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == expected


def test_depth_limit_then_nearest_definition() -> None:
    lineage = [
        ("", cfg(), (spec("x"),)),
        ("p", cfg(), ()),
        ("p/me", cfg(inherit_tools_depth=1), ()),
    ]
    tools, _ = resolve(lineage)
    assert names(tools) == []


def test_intermediate_inherit_settings_do_not_cut_the_chain() -> None:
    # inheritance walks every ancestor's own tools; only scope/block_tools stop propagation.
    lineage = [
        ("", cfg(), (spec("x"),)),
        ("mid", cfg(inherit_tools=False, exclude_tools=["x"], inherit_tools_depth=0), ()),
        ("mid/leaf", cfg(), ()),
    ]
    mid_tools, _ = resolve(lineage[:2])
    leaf_tools, _ = resolve(lineage)
    assert names(mid_tools) == []
    assert names(leaf_tools) == ["x"]


def test_shared_tools_need_use_shared_and_rank_between_own_and_inherited() -> None:
    shared = [spec("search_api", owner="<shared>"), spec("format_results", owner="<shared>")]
    lineage = [
        ("", cfg(), (spec("search_api"), spec("format_results"))),
        (
            "t",
            cfg(tools={"use_shared": ["search_api", "format_results"]}),
            (spec("format_results", owner="t"),),
        ),
    ]
    tools, diagnostics = resolve(lineage, shared)
    assert diagnostics == []
    assert [(t.name, t.origin, t.owner) for t in tools] == [
        ("format_results", "own", "t"),
        ("search_api", "shared", "<shared>"),
    ]
    without, _ = resolve([("", cfg(), ()), ("t", cfg(), ())], shared)
    assert names(without) == []


def test_shared_tools_are_not_inherited_from_an_ancestor_that_uses_them() -> None:
    shared = [spec("fmt", owner="<shared>")]
    lineage = [("", cfg(tools={"use_shared": ["fmt"]}), ()), ("c", cfg(), ())]
    root_tools, _ = resolve(lineage[:1], shared)
    child_tools, _ = resolve(lineage, shared)
    assert names(root_tools) == ["fmt"]
    assert names(child_tools) == []


def test_unknown_use_shared_is_an_error_with_did_you_mean() -> None:
    shared = [spec("search_api", owner="<shared>")]
    _, (diagnostic,) = resolve([("t", cfg(tools={"use_shared": ["serch_api"]}), ())], shared)
    assert diagnostic.code == "FP220"
    assert diagnostic.severity == Severity.ERROR
    assert diagnostic.task == "t"
    assert "serch_api" in diagnostic.message
    assert "search_api" in (diagnostic.hint or "")


def test_unknown_names_in_lists_are_warnings_with_did_you_mean() -> None:
    lineage = [
        ("", cfg(), (spec("search_api"), spec("admin_api"))),
        (
            "t",
            cfg(
                inherit_tools=["serch_api"],
                exclude_tools=["admn_api"],
                block_tools=["mine_typo", "mine"],
            ),
            (spec("mine", owner="t"),),
        ),
    ]
    _, diagnostics = resolve(lineage)
    assert [(d.code, d.severity) for d in diagnostics] == [
        ("FP221", Severity.WARNING),
        ("FP222", Severity.WARNING),
        ("FP223", Severity.WARNING),
    ]
    hints = [d.hint or "" for d in diagnostics]
    assert "search_api" in hints[0] and "admin_api" in hints[1] and "mine" in hints[2]


def test_block_tools_naming_an_inherited_tool_is_known() -> None:
    lineage = [("", cfg(), (spec("admin_api"),)), ("m", cfg(block_tools=["admin_api"]), ())]
    _, diagnostics = resolve(lineage)
    assert diagnostics == []


def test_fixture_tree_through_the_loader() -> None:
    from pathlib import Path

    from prefect_folpipe.validate import load_workflow

    workflow = load_workflow(Path(__file__).parent.parent / "fixtures" / "tools" / "inheritance")
    seen = {
        task.path: [(t.name, t.origin, t.owner) for t in task.tools] for task in workflow.tasks()
    }
    assert seen[""] == [
        ("admin_api", "own", ""),
        ("search_api", "own", ""),
        ("root_only", "own", ""),
    ]
    assert seen["manager"] == [
        ("manage", "own", "manager"),
        ("delegate", "own", "manager"),
        ("admin_api", "inherited", ""),
        ("search_api", "inherited", ""),
    ]
    assert seen["manager/worker"] == [
        ("format_results", "shared", "<shared>"),
        ("delegate", "inherited", "manager"),
        ("search_api", "inherited", ""),
    ]
    assert seen["picky"] == [("search_api", "inherited", "")]
    (warning,) = workflow.warnings
    assert (warning.code, warning.line) == ("FP221", 1)
    assert warning.file and warning.file.endswith("task.yaml")
