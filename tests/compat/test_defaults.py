"""Defaults (point 8): transient failures are retried and every attempt has a time limit
unless task.yaml says otherwise; author errors are never retried."""

from __future__ import annotations

from prefect_folpipe.validate import load_workflow


def test_effective_defaults(make_workflow):
    path = make_workflow(
        {
            "subtasks/plain/instructions.md": "x",
            "subtasks/said/task.yaml": {"settings": {"max_retries": 0, "timeout": -1}},
            "subtasks/said/instructions.md": "x",
            "subtasks/loop/task.yaml": {
                "subtasks": {"execution_type": "loop", "max_iterations": 2}
            },
            "subtasks/loop/subtasks/step/instructions.md": "x",
        }
    )
    workflow = load_workflow(path)
    plain = workflow.find("plain").settings
    assert (plain.max_retries, plain.timeout) == (2, 300.0)
    assert plain.retry_on == ("rate_limit", "server_error", "timeout", "TimeoutError")
    said = workflow.find("said").settings
    assert (said.max_retries, said.timeout, said.retry_on) == (0, None, None)
    assert workflow.find("loop").settings.timeout is None  # it would bound the whole loop
    assert workflow.find("loop/step").settings.timeout == 300.0


def test_a_rate_limit_is_retried_by_default(make_workflow, run):
    path = make_workflow(
        {
            "instructions.md": "x",
            "replies.yaml": {"default": [{"error": "rate_limit"}, "recovered"]},
        }
    )
    result = run(path)
    assert result.status == "completed"
    root = result.tasks[0]
    assert root["attempts"] == 2
    assert result.context[root["name"]] == "recovered"


def test_author_errors_are_not_retried_by_default(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"output": {"score": "int"}, "settings": {"output_retries": 0}},
            "instructions.md": "x",
            "replies.yaml": {"default": [{"output": {"score": "high"}}, {"output": {"score": 1}}]},
        }
    )
    result = run(path)
    assert result.status == "failed"
    assert result.tasks[0]["attempts"] == 1
    assert "FP312" in result.tasks[0]["error"]


def test_auth_errors_are_not_retried_by_default(make_workflow, run):
    path = make_workflow(
        {"instructions.md": "x", "replies.yaml": {"default": [{"error": "auth"}, "never"]}}
    )
    result = run(path)
    assert result.status == "failed"
    assert result.tasks[0]["attempts"] == 1
