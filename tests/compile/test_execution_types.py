"""Each execution type and failure policy, run for real under the Prefect harness."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.prefect


def _leaf(text: str = "Do it.", **yaml_keys: object) -> dict[str, object]:
    files: dict[str, object] = {"instructions.md": text}
    if yaml_keys:
        files["task.yaml"] = yaml_keys
    return files


def _tree(children: dict[str, dict[str, object]], root: dict, replies: dict) -> dict:
    files: dict[str, object] = {"task.yaml": root, "replies.yaml": replies}
    for folder, content in children.items():
        for name, value in content.items():
            files[f"subtasks/{folder}/{name}"] = value
    return files


def test_sequential_passes_context_forward(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"10_write": _leaf(output=["draft"]), "20_read": _leaf("Read the draft.")},
            {"name": "seq", "subtasks": {"execution_type": "sequential"}},
            {"tasks": {"write": [{"output": {"draft": "v1-text"}}], "read": [{"echo": True}]}},
        )
    )
    result = run(wf, {"topic": "prefect"})
    assert result.status == "completed"
    assert result.context["draft"] == "v1-text"
    assert result.context["write"] == {"draft": "v1-text"}
    assert "v1-text" in result.context["read"] and "prefect" in result.context["read"]
    assert [row["path"] for row in result.tasks] == ["", "write", "read"]
    assert all(row["status"] == "completed" for row in result.tasks)
    assert result.task("read")["model_calls"] == 1


def test_parallel_siblings_do_not_see_each_other_and_merge_in_sibling_order(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"a": _leaf(output=["value"]), "b": _leaf(output=["value"]), "c": _leaf()},
            {"name": "par"},
            {
                "tasks": {
                    "a": [{"output": {"value": "from-a"}, "delay": 0.6}],
                    "b": [{"output": {"value": "from-b"}}],
                    "c": [{"echo": True}],
                }
            },
        )
    )
    result = run(wf)
    assert result.status == "completed"
    assert result.context["value"] == "from-b"  # b merges after a, though a finished last
    assert result.context["a"] == {"value": "from-a"}
    assert "from-b" not in result.context["c"]


def test_parallel_fail_fast_cancels_in_flight_siblings(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"bad": _leaf(), "slow": _leaf()},
            {"name": "failfast"},
            {"tasks": {"bad": [{"error": "auth"}], "slow": [{"text": "late", "delay": 20}]}},
        )
    )
    started = time.monotonic()
    result = run(wf)
    assert time.monotonic() - started < 15
    assert result.status == "failed"
    assert result.task("bad")["status"] == "failed"
    assert "auth" in result.task("bad")["error"] or "ProviderError" in result.task("bad")["error"]
    assert result.task("slow")["status"] == "failed"
    assert "cancelled" in result.task("slow")["error"]
    assert "slow" not in result.context


def test_on_error_continue_finishes_siblings_then_fails(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"10_bad": _leaf(), "20_good": _leaf()},
            {"name": "cont", "subtasks": {"execution_type": "sequential", "on_error": "continue"}},
            {"tasks": {"bad": [{"error": "bad_request"}], "good": [{"echo": True}]}},
        )
    )
    result = run(wf)
    assert result.status == "failed"
    assert result.task("good")["status"] == "completed"
    assert "_errors" in result.context["good"]  # the later sibling saw the error entry
    assert result.context["_errors"][0]["task"] == "bad"


def test_on_error_ignore_records_errors_and_succeeds(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"bad": _leaf(), "good": _leaf()},
            {"name": "ign", "subtasks": {"on_error": "ignore"}},
            {"tasks": {"bad": [{"error": "auth"}]}},
        )
    )
    result = run(wf)
    assert result.status == "completed"
    assert result.context["good"] == "ok"
    assert "bad" not in result.context
    [entry] = result.context["_errors"]
    assert entry["task"] == "bad" and entry["iteration"] is None
    assert "ProviderError" in entry["error"]


def test_task_on_failure_skip_and_use_default(make_workflow, run):
    wf = make_workflow(
        _tree(
            {
                "skipper": _leaf(on_failure="skip"),
                "defaulter": _leaf(
                    output=["approved"],
                    on_failure="use_default",
                    default_output={"approved": False},
                ),
            },
            {"name": "onfail"},
            {"tasks": {"skipper": [{"error": "auth"}], "defaulter": [{"error": "auth"}]}},
        )
    )
    result = run(wf)
    assert result.status == "completed"
    assert result.context["approved"] is False
    assert result.context["defaulter"] == {"approved": False}
    assert "skipper" not in result.context
    assert sorted(e["task"] for e in result.context["_errors"]) == ["defaulter", "skipper"]
    assert result.task("skipper")["status"] == "failed"


def test_priority_groups_run_groups_in_order(make_workflow, run):
    wf = make_workflow(
        _tree(
            {
                "10_a": _leaf(output=["a_out"]),
                "10_b": _leaf(output=["b_out"]),
                "20_merge": _leaf(),
            },
            {"name": "prio", "subtasks": {"execution_type": "priority_groups"}},
            {
                "tasks": {
                    "a": [{"output": {"a_out": "A!"}, "delay": 0.3}],
                    "b": [{"output": {"b_out": "B!"}}],
                    "merge": [{"echo": True}],
                }
            },
        )
    )
    result = run(wf)
    assert result.status == "completed"
    assert "A!" in result.context["merge"] and "B!" in result.context["merge"]


def test_graph_runs_dependents_after_upstreams_and_skips_after_failure(make_workflow, run):
    wf = make_workflow(
        _tree(
            {
                "fetch": _leaf(output=["data"]),
                "broken": _leaf(),
                "report": _leaf(depends_on=["fetch"]),
                "after_broken": _leaf(depends_on=["broken"]),
                "after_after": _leaf(depends_on=["after_broken"]),
            },
            {"name": "dag", "subtasks": {"execution_type": "graph", "on_error": "continue"}},
            {
                "tasks": {
                    "fetch": [{"output": {"data": [1, 2, 3]}, "delay": 0.3}],
                    "broken": [{"error": "auth"}],
                    "report": [{"echo": True}],
                }
            },
        )
    )
    result = run(wf)
    assert result.status == "failed"
    assert "[1, 2, 3]" in result.context["report"] or "1" in result.context["report"]
    assert result.task("report")["status"] == "completed"
    assert result.task("after_broken")["status"] == "skipped"
    assert "broken" in result.task("after_broken")["error"]
    assert "broken" in result.task("after_after")["error"]


def test_loop_until_met_names_iterations_and_counts(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"10_write": _leaf(output=["draft"]), "20_review": _leaf(output=["approved"])},
            {
                "name": "loop",
                "subtasks": {
                    "execution_type": "loop",
                    "until": "context.review.approved == true",
                    "max_iterations": 4,
                },
            },
            {
                "tasks": {
                    "write": [{"output": {"draft": "d1"}}, {"output": {"draft": "d2"}}],
                    "review": [{"output": {"approved": False}}, {"output": {"approved": True}}],
                }
            },
        )
    )
    result = run(wf)
    assert result.status == "completed"
    assert result.context["draft"] == "d2" and result.context["approved"] is True
    assert result.task("")["iterations"] == 2
    assert result.task("write")["iterations"] == 2
    assert result.task("write")["model_calls"] == 2


@pytest.mark.parametrize("policy", ["fail", "succeed_with_last"])
def test_loop_max_iterations_policy(make_workflow, run, policy):
    wf = make_workflow(
        _tree(
            {"review": _leaf(output=["approved"])},
            {
                "name": "maxit",
                "subtasks": {
                    "execution_type": "loop",
                    "until": "context.approved",
                    "max_iterations": 2,
                    "on_max_iterations": policy,
                },
            },
            {"tasks": {"review": [{"output": {"approved": False}}]}},
        )
    )
    result = run(wf)
    assert result.task("review")["iterations"] == 2
    if policy == "fail":
        assert result.status == "failed"
        assert "max_iterations" in result.task("")["error"]
    else:
        assert result.status == "completed" and result.context["approved"] is False


def test_loop_on_error_continue_rolls_back_the_iteration(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"10_write": _leaf(output=["draft"]), "20_review": _leaf(output=["approved"])},
            {
                "name": "rollback",
                "subtasks": {
                    "execution_type": "loop",
                    "until": "context.approved",
                    "max_iterations": 3,
                    "on_error": "continue",
                },
            },
            {
                "tasks": {
                    "write": [{"output": {"draft": "bad-draft"}}, {"output": {"draft": "good"}}],
                    "review": [{"error": "bad_request"}, {"output": {"approved": True}}],
                }
            },
        )
    )
    result = run(wf)
    assert result.status == "completed"
    assert result.context["draft"] == "good"
    [entry] = result.context["_errors"]
    assert entry == {"task": "review", "path": "review", "error": entry["error"], "iteration": 1}
    assert result.task("")["iterations"] == 2


def test_loop_iteration_timeout(make_workflow, run):
    wf = make_workflow(
        _tree(
            {"slow": _leaf(output=["done"])},
            {
                "name": "itimeout",
                "subtasks": {
                    "execution_type": "loop",
                    "until": "context.done",
                    "max_iterations": 2,
                    "iteration_timeout": 1,
                },
            },
            {"tasks": {"slow": [{"output": {"done": True}, "delay": 30}]}},
        )
    )
    started = time.monotonic()
    result = run(wf)
    assert time.monotonic() - started < 20
    assert result.status == "failed"
    assert "iteration_timeout" in result.task("")["error"]


def test_skip_if_skips_a_task_and_a_whole_branch(make_workflow, run):
    files = _tree(
        {"a": _leaf(conditions={"skip_if": "context.mode == 'fast'"}), "b": _leaf()},
        {"name": "skips"},
        {},
    )
    files["subtasks/branch/task.yaml"] = {"conditions": {"skip_if": "context.mode == 'fast'"}}
    files["subtasks/branch/subtasks/inner/instructions.md"] = "Inner."
    wf = make_workflow(files)
    result = run(wf, {"mode": "fast"})
    assert result.status == "completed"
    assert result.task("a")["status"] == "skipped"
    assert result.task("branch")["status"] == "skipped"
    assert result.task("branch/inner")["status"] == "skipped"
    assert result.context["b"] == "ok" and "a" not in result.context


def test_disabled_tasks_are_reported_skipped_after_their_enabled_siblings(make_workflow, run):
    files = {
        "task.yaml": {"name": "toggles", "subtasks": {"execution_type": "sequential"}},
        "subtasks/10_old/task.yaml": {"enabled": False},
        "subtasks/10_old/instructions.md": "Old.",
        "subtasks/20_new/instructions.md": "New.",
        "subtasks/30_parked/task.yaml": {"enabled": False},
        "subtasks/30_parked/subtasks/inner/instructions.md": "Inner.",
    }
    result = run(make_workflow(files))
    assert result.status == "completed"
    assert [t["path"] for t in result.tasks] == ["", "new", "old", "parked", "parked/inner"]
    for path in ("old", "parked", "parked/inner"):
        entry = result.task(path)
        assert entry["status"] == "skipped" and entry["model_calls"] == 0
        assert entry["error"] == "disabled (enabled: false)"
    assert "old" not in result.context and result.context["new"] == "ok"


def test_both_task_first_pass_children_then_final_pass_wins(make_workflow, run):
    files = _tree(
        {"child": _leaf(output=["fact"])},
        {"name": "both"},
        {
            "tasks": {
                "plan": [{"output": {"summary": "planned"}}, {"output": {"summary": "final!"}}],
                "child": [{"output": {"fact": 42}}],
            }
        },
    )
    files["subtasks/child/task.yaml"] = {"output": ["fact"]}
    files = {
        "task.yaml": {"name": "both-wf", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": files["replies.yaml"],
        "subtasks/plan/instructions.md": "Plan, then summarise.",
        "subtasks/plan/task.yaml": {"output": ["summary"]},
        "subtasks/plan/subtasks/child/instructions.md": "Find a fact.",
        "subtasks/plan/subtasks/child/task.yaml": {"output": ["fact"]},
    }
    wf = make_workflow(files)
    result = run(wf)
    assert result.status == "completed"
    assert result.context["summary"] == "final!"
    assert result.context["fact"] == 42
    assert result.task("plan")["model_calls"] == 2


@pytest.mark.parametrize("branch_as", ["task", "subflow"])
def test_branch_mappings_give_the_same_result(make_workflow, run, branch_as):
    files = {
        "task.yaml": {"name": f"map-{branch_as}", "settings": {"branch_as": branch_as}},
        "replies.yaml": {"tasks": {"x": [{"output": {"xv": 1}}], "y": [{"output": {"yv": 2}}]}},
        "subtasks/b1/subtasks/x/instructions.md": "x",
        "subtasks/b1/subtasks/x/task.yaml": {"output": ["xv"]},
        "subtasks/b2/subtasks/y/instructions.md": "y",
        "subtasks/b2/subtasks/y/task.yaml": {"output": ["yv"]},
    }
    result = run(make_workflow(files))
    assert result.status == "completed"
    assert result.context["xv"] == 1 and result.context["yv"] == 2
    assert result.task("b1")["status"] == "completed"


def test_loop_settings_timeout_bounds_the_whole_loop(make_workflow, run):
    files = _tree(
        {"step": _leaf(output=["done"], settings={"timeout": -1})},
        {
            "name": "looptimeout",
            "settings": {"timeout": 1.5},
            "subtasks": {"execution_type": "loop", "until": "context.done", "max_iterations": 50},
        },
        {"tasks": {"step": [{"output": {"done": False}, "delay": 0.4}]}},
    )
    started = time.monotonic()
    result = run(make_workflow(files))
    assert time.monotonic() - started < 20
    assert result.status == "failed"
    assert "FP514" in result.task("")["error"]
    assert 1 <= result.task("")["iterations"] <= 5
