"""task.yaml ``hooks:`` with ``{type: http, url}`` (point 3): POST the task's context, through
the http tool's egress rules; shell hooks also get folpipe 0.1.8's ``AGENTFLOW_*`` names."""

from __future__ import annotations

import json

import pytest
from pytest_httpserver import HTTPServer

from prefect_folpipe import validate_workflow


@pytest.fixture
def receiver():
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


def hook_workflow(make_workflow, url: str, *, private: bool, auth: bool = False):
    post = {"type": "http", "url": url + "/done"}
    if auth:
        post["auth_env"] = "FOLPIPE_TEST_HOOK_TOKEN"
    return make_workflow(
        {
            "task.yaml": {
                "name": "notify",
                "context": {"ticket": 7},
                "output": ["status"],
                "hooks": {"pre_run": {"type": "http", "url": url + "/start"}, "post_run": post},
                "security": {"allow_private_network": private},
            },
            "instructions.md": "Do it.",
            "replies.yaml": {"default": [{"output": {"status": "done"}}]},
        }
    )


def test_http_hooks_post_the_context(make_workflow, run, receiver, monkeypatch):
    monkeypatch.setenv("FOLPIPE_TEST_HOOK_TOKEN", "tok-123")
    receiver.expect_request("/start", method="POST").respond_with_json({"ok": True})
    receiver.expect_request("/done", method="POST").respond_with_json({"ok": True})
    path = hook_workflow(make_workflow, receiver.url_for("").rstrip("/"), private=True, auth=True)
    assert validate_workflow(path) == []
    result = run(path)
    assert result.status == "completed", result.tasks[0]["error"]
    (start, _), (done, _) = receiver.log
    assert json.loads(start.get_data())["ticket"] == 7
    posted = json.loads(done.get_data())
    assert posted["ticket"] == 7 and posted["status"] == "done"  # post_run sees the output
    assert done.headers["Authorization"] == "Bearer tok-123"
    assert done.headers["Content-Type"] == "application/json"


def test_http_hooks_obey_the_egress_rules(make_workflow, run, receiver):
    path = hook_workflow(make_workflow, receiver.url_for("").rstrip("/"), private=False)
    result = run(path)
    assert result.status == "failed"
    error = result.tasks[0]["error"]
    assert "pre_run http hook" in error and "private" in error.lower()
    assert receiver.log == []


def test_a_failing_http_hook_fails_the_task(make_workflow, run, receiver):
    receiver.expect_request("/start", method="POST").respond_with_data("no", status=503)
    path = hook_workflow(make_workflow, receiver.url_for("").rstrip("/"), private=True)
    result = run(path)
    assert result.status == "failed"
    assert "503" in result.tasks[0]["error"]


def test_a_hook_file_wins_over_the_http_hook(make_workflow):
    path = make_workflow(
        {
            "task.yaml": {"hooks": {"pre_run": {"url": "https://hooks.example.com/x"}}},
            "instructions.md": "x",
            "hooks/pre_run.py": "def run(ctx, task):\n    pass\n",
        }
    )
    [warning] = validate_workflow(path)
    assert (warning.code, warning.file, warning.line) == ("FP226", "task.yaml", 2)


def test_shell_hooks_get_the_agentflow_names(make_workflow, run):
    hook = (
        'echo "{\\"seen_task\\": \\"$AGENTFLOW_TASK_NAME\\", '
        '\\"has_context\\": $(test -n "$AGENTFLOW_CONTEXT" && echo true || echo false), '
        '\\"has_file\\": $(test -s "$AGENTFLOW_CONTEXT_FILE" && echo true || echo false)}"\n'
    )
    path = make_workflow(
        {"task.yaml": {"name": "shelly"}, "instructions.md": "x", "hooks/pre_run.sh": hook}
    )
    result = run(path)
    assert result.status == "completed"
    assert result.context["seen_task"] == "shelly"
    assert result.context["has_context"] is True and result.context["has_file"] is True
