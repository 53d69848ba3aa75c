"""Failures as they travel up the tree (issue 11 points 2, 3, 7): ``_errors`` recorded at any
depth reach the ancestors, a graph task's absorbed failure does not hold its dependents back, and
a workflow nested 200+ levels deep runs, with errors that do not grow per level."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.prefect

NO_RETRY = {"max_retries": 0}
SAW_BAD = "any(e['path'] == 'outer/mid/bad' for e in context.get('_errors', []))"


def _nested_failure(mid: dict[str, Any], outer: dict[str, Any] | None = None) -> dict[str, Any]:
    """priority_groups root; group 10: outer (parallel) > mid (parallel) > bad (on_failure:
    skip), worse, good; group 20: ``after``, skipped when it sees bad's ``_errors`` entry."""
    outer = outer or {}
    return {
        "task.yaml": {"name": "nested", "subtasks": {"execution_type": "priority_groups"}},
        "replies.yaml": {"tasks": {"bad": [{"error": "auth"}], "worse": [{"error": "auth"}]}},
        "subtasks/10_outer/task.yaml": {
            **outer,
            "subtasks": {"execution_type": "parallel", **outer.get("subtasks", {})},
        },
        "subtasks/10_outer/subtasks/mid/task.yaml": {
            **mid,
            "subtasks": {"execution_type": "parallel", **mid.get("subtasks", {})},
        },
        "subtasks/10_outer/subtasks/mid/subtasks/bad/instructions.md": "Fails.",
        "subtasks/10_outer/subtasks/mid/subtasks/bad/task.yaml": {
            "on_failure": "skip",
            "settings": NO_RETRY,
        },
        "subtasks/10_outer/subtasks/mid/subtasks/good/instructions.md": "Works.",
        "subtasks/20_after/instructions.md": "Only when nothing failed.",
        "subtasks/20_after/task.yaml": {"conditions": {"skip_if": SAW_BAD}},
    }


def _with_worse(files: dict[str, Any]) -> dict[str, Any]:
    """Add ``worse``, a sibling of ``bad`` that fails without a policy: ``mid`` fails."""
    return {
        **files,
        "subtasks/10_outer/subtasks/mid/subtasks/worse/instructions.md": "Fails too.",
        "subtasks/10_outer/subtasks/mid/subtasks/worse/task.yaml": {"settings": NO_RETRY},
    }


def _error_tasks(result: Any) -> list[str]:
    return sorted(entry["path"] for entry in result.context.get("_errors", []))


def test_errors_two_levels_down_under_priority_groups_reach_the_root(make_workflow, run):
    result = run(make_workflow(_nested_failure({})))
    assert result.status == "completed"
    assert _error_tasks(result) == ["outer/mid/bad"]
    assert result.task("after")["status"] == "skipped"


def test_a_0_1_8_condition_on_the_task_name_matches_a_nested_task(make_workflow, run):
    """folpipe 0.1.8 wrote the task's name in ``_errors[].task``; conditions written for it
    (``e['task'] == 'bad'``) match a task at any depth, and ``path`` says where it is."""
    files = _nested_failure({})
    by_name = "any(e['task'] == 'bad' for e in context.get('_errors', []))"
    files["subtasks/20_after/task.yaml"] = {"conditions": {"skip_if": by_name}}
    result = run(make_workflow(files))
    assert result.status == "completed"
    [entry] = result.context["_errors"]
    assert (entry["task"], entry["path"], entry["iteration"]) == ("bad", "outer/mid/bad", None)
    assert "ProviderError" in entry["error"]
    assert result.task("after")["status"] == "skipped"


@pytest.mark.parametrize(
    ("mid", "outer", "absorbed_by"),
    [
        ({"subtasks": {"on_error": "continue"}}, {"subtasks": {"on_error": "ignore"}}, "outer/mid"),
        ({"on_failure": "skip"}, {}, "outer/mid"),
        ({"subtasks": {"on_error": "continue"}, "on_failure": "skip"}, {}, "outer/mid"),
    ],
    ids=["failed-branch-ignored-by-parent", "failed-branch-skipped", "continue-then-skipped"],
)
def test_errors_inside_a_branch_that_then_fails_are_not_lost(
    make_workflow, run, mid, outer, absorbed_by
):
    """``bad`` is absorbed by its own ``on_failure``; its sibling ``worse`` then fails ``mid``,
    and an ancestor absorbs that. Both entries reach the root: the nested one used to vanish
    with the failed branch's return value."""
    result = run(make_workflow(_with_worse(_nested_failure(mid, outer))))
    assert result.status == "completed"
    tasks = _error_tasks(result)
    assert "outer/mid/bad" in tasks, result.context.get("_errors")
    assert absorbed_by in tasks or "outer/mid/worse" in tasks
    assert result.task("after")["status"] == "skipped"


def test_errors_of_a_rolled_back_loop_iteration_stay_on_record(make_workflow, run):
    files = {
        "task.yaml": {
            "name": "loopy",
            "subtasks": {"execution_type": "loop", "max_iterations": 2, "on_error": "continue"},
        },
        "replies.yaml": {"tasks": {"bad": [{"error": "auth"}], "worse": [{"error": "auth"}]}},
        "subtasks/step/task.yaml": {"subtasks": {"execution_type": "sequential"}},
        "subtasks/step/subtasks/10_bad/instructions.md": "Fails, skipped.",
        "subtasks/step/subtasks/10_bad/task.yaml": {"on_failure": "skip", "settings": NO_RETRY},
        "subtasks/step/subtasks/20_worse/instructions.md": "Fails the iteration.",
        "subtasks/step/subtasks/20_worse/task.yaml": {"settings": NO_RETRY},
    }
    result = run(make_workflow(files))
    assert result.status == "completed"
    entries = [(e["path"], e["iteration"]) for e in result.context["_errors"]]
    assert {e["task"] for e in result.context["_errors"]} == {"bad", "worse"}  # names
    assert ("step/bad", 1) in entries and ("step/bad", 2) in entries
    assert ("step/worse", 1) in entries and ("step/worse", 2) in entries


@pytest.mark.parametrize("mode", ["skip", "use_default"])
def test_graph_dependents_run_after_an_upstream_failure_absorbed_by_on_failure(
    make_workflow, run, mode
):
    """The dependent used to fail with Prefect's "UnfinishedRun: Run is in PENDING state"."""
    upstream: dict[str, Any] = {"on_failure": mode, "settings": NO_RETRY, "output": ["value"]}
    if mode == "use_default":
        upstream["default_output"] = {"value": "fallback"}
    files = {
        "task.yaml": {"name": "dag", "subtasks": {"execution_type": "graph"}},
        "replies.yaml": {"tasks": {"up": [{"error": "auth"}], "down": [{"echo": True}]}},
        "subtasks/up/instructions.md": "Fetch.",
        "subtasks/up/task.yaml": upstream,
        "subtasks/down/instructions.md": "Use it.",
        "subtasks/down/task.yaml": {"depends_on": ["up"]},
        "subtasks/other/instructions.md": "Independent.",
        "subtasks/other/task.yaml": {"depends_on": ["down"]},
    }
    result = run(make_workflow(files))
    assert result.status == "completed", result.task("down")["error"]
    assert result.task("down")["status"] == "completed"
    assert result.task("other")["status"] == "completed"
    assert result.task("up")["status"] == "failed"
    assert [e["task"] for e in result.context["_errors"]] == ["up"]
    if mode == "use_default":
        assert result.context["value"] == "fallback"
        assert "fallback" in result.context["down"]  # the dependent saw the default output
    else:
        assert "value" not in result.context


DEPTH = 202


def _deep_chain(depth: int) -> dict[str, Any]:
    """A chain of ``depth`` nested branches; the deepest holds ``good`` and ``bad`` (its group
    finishes both, then fails)."""
    rel = "".join(f"subtasks/l{level}/" for level in range(depth))
    return {
        "task.yaml": {"name": "deep"},
        "replies.yaml": {"tasks": {"bad": [{"error": "auth"}], "good": ["deep answer"]}},
        f"{rel}task.yaml": {"subtasks": {"on_error": "continue"}},
        f"{rel}subtasks/good/instructions.md": "Answer.",
        f"{rel}subtasks/bad/instructions.md": "Fail.",
        f"{rel}subtasks/bad/task.yaml": {"settings": NO_RETRY},
    }


def test_a_workflow_nested_202_levels_deep_runs_and_its_errors_do_not_nest(make_workflow, run):
    result = run(make_workflow(_deep_chain(DEPTH)))
    assert result.status == "failed"
    deepest = "/".join(f"l{level}" for level in range(DEPTH))
    assert result.task(f"{deepest}/good")["status"] == "completed"  # 203 levels down
    assert result.task(f"{deepest}/bad")["status"] == "failed"
    root_error = result.task("")["error"]
    assert "RecursionError" not in json.dumps(result.tasks)
    assert root_error.count("FP510") == 1 and root_error.count("ProviderError") == 1
    assert f"'{deepest}/bad'" in root_error  # names where the failure began
    assert len(root_error) < len(deepest) + 200
    for row in result.tasks:  # every level says the same, once
        if row["error"] and row["path"] != f"{deepest}/bad":
            assert row["error"] == root_error
    assert len(result.to_json()) < 250 * DEPTH * 8  # linear in the depth (it was 1.8 MB)
