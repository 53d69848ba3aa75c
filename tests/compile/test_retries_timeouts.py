"""Retries (max_retries, retry_on, never-retried error classes) and timeouts that cancel work."""

from __future__ import annotations

import subprocess
import time

import pytest

pytestmark = pytest.mark.prefect


def _one_leaf(settings: dict, replies: list, **task_yaml: object) -> dict:
    files: dict[str, object] = {
        "task.yaml": {"name": "retries", "settings": settings},
        "replies.yaml": {"tasks": {"flaky": replies}},
        "subtasks/flaky/instructions.md": "Try.",
    }
    if task_yaml:
        files["subtasks/flaky/task.yaml"] = task_yaml
    return files


def test_transient_provider_error_is_retried(make_workflow, run):
    wf = make_workflow(
        _one_leaf({"max_retries": 2, "retry_delay_seconds": 0}, [{"error": "rate_limit"}, "fine"])
    )
    result = run(wf)
    assert result.status == "completed"
    assert result.context["flaky"] == "fine"
    assert result.task("flaky")["attempts"] == 2


def test_model_calls_of_a_failed_attempt_count_in_the_run_report(make_workflow, run):
    files = _one_leaf(
        {"max_retries": 1, "retry_delay_seconds": 0},
        [
            {"tool_calls": [{"name": "note", "arguments": {}}]},  # attempt 1: one call ...
            {"error": "rate_limit"},  # ... then the second call fails
            "fine",  # attempt 2
        ],
    )
    files["subtasks/flaky/tools.md"] = (
        "## note\n> type: shell\n\nSay hi.\n\n```bash\necho hi\n```\n"
    )
    result = run(make_workflow(files))
    assert result.status == "completed"
    flaky = result.task("flaky")
    assert flaky["attempts"] == 2
    # every call counts: the failed attempt's successful call and its failed one, then the
    # second attempt's call (issue 11 point 5)
    assert flaky["model_calls"] == 3
    assert result.usage["model_calls"] == 3


def test_auth_errors_are_never_retried(make_workflow, run):
    wf = make_workflow(
        _one_leaf({"max_retries": 3, "retry_delay_seconds": 0}, [{"error": "auth"}, "fine"])
    )
    result = run(wf)
    assert result.status == "failed"
    assert result.task("flaky")["attempts"] == 1


def test_retry_on_restricts_which_errors_are_retried(make_workflow, run):
    files = _one_leaf(
        {"max_retries": 3, "retry_delay_seconds": 0},
        [{"error": "server_error"}, "fine"],
        conditions={"retry_on": ["ConnectionError", "rate_limit"]},
    )
    result = run(make_workflow(files))
    assert result.status == "failed"
    assert result.task("flaky")["attempts"] == 1

    files = _one_leaf(
        {"max_retries": 3, "retry_delay_seconds": 0},
        [{"error": "rate_limit"}, "fine"],
        conditions={"retry_on": ["rate_limit"]},
    )
    result = run(make_workflow(files))
    assert result.status == "completed" and result.task("flaky")["attempts"] == 2


def test_timeout_cancels_a_slow_model_call(make_workflow, run):
    wf = make_workflow(
        _one_leaf({"timeout": 1, "max_retries": 0}, [{"text": "too late", "delay": 60}])
    )
    started = time.monotonic()
    result = run(wf)
    assert time.monotonic() - started < 20
    assert result.status == "failed"
    assert "timeout" in result.task("flaky")["error"]


def test_two_second_timeout_stops_a_sixty_second_shell_tool(make_workflow, run):
    marker = "61.73"
    files = {
        "task.yaml": {"name": "shell-timeout", "settings": {"timeout": 2, "max_retries": 0}},
        "replies.yaml": {
            "tasks": {"napper": [{"tool_calls": [{"name": "nap", "arguments": {}}]}, "woke"]}
        },
        "subtasks/napper/instructions.md": "Take a nap with the tool.",
        "subtasks/napper/tools.md": (
            f"## nap\n> type: shell\n> timeout: 120\n\nSleep.\n\n```bash\nsleep {marker}\n```\n"
        ),
    }
    started = time.monotonic()
    result = run(make_workflow(files))
    elapsed = time.monotonic() - started
    assert result.status == "failed"
    assert "timeout" in result.task("napper")["error"]
    assert elapsed < 30
    deadline = time.monotonic() + 5  # the group's SIGKILL lands at once; reaping may lag
    pgrep = ["pgrep", "-f", f"sleep {marker}"]
    while True:
        leftover = subprocess.run(pgrep, capture_output=True, text=True)
        if not leftover.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert leftover.stdout.strip() == "", "the shell tool's process survived the timeout"
