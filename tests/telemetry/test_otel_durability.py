"""Durability in the trace: a resumed run's replayed model calls are ``chat`` spans marked
replayed (no tokens paid, cost 0), its restored tasks are marked restored, and its trace links
to the trace of the run it resumes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from .receiver import otlp_receiver
from .test_otel_export import TOOLS_MD, folpipe, operation, traced_env, write

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]


def _files() -> dict[str, Any]:
    fetch = [
        {"tool_calls": [{"name": "today", "arguments": {}}]},
        {"output": {"facts": "monday"}, "delay": 1.3},  # slower than the first run's timeout
    ]
    return {
        "task.yaml": {
            "name": "resumed",
            "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
            "subtasks": {"execution_type": "sequential"},
        },
        "replies.yaml": {"tasks": {"plan": [{"output": {"plan": "p"}}], "fetch": fetch}},
        "subtasks/10_plan/instructions.md": "Plan.",
        "subtasks/10_plan/task.yaml": {"output": ["plan"]},
        "subtasks/20_fetch/instructions.md": "Fetch.",
        "subtasks/20_fetch/task.yaml": {
            "output": ["facts"],
            "settings": {"timeout": 1.0, "max_retries": 0},
        },
        "subtasks/20_fetch/tools.md": TOOLS_MD,
    }


def test_a_resume_marks_replayed_calls_and_restored_tasks(cli_env, tmp_path):
    wf = write(tmp_path / "wf", _files())
    with otlp_receiver() as (endpoint, got):
        env = traced_env(cli_env, endpoint)
        first = folpipe(env, "run", wf, "--json")
        assert first.returncode == 1, first.stderr[-3000:]
        assert got.wait_for("invoke_workflow")
        [failed_run] = operation(list(got.spans), "invoke_workflow")
        assert failed_run["folpipe.status"] == "failed"
        calls = [s for s in operation(got.spans, "chat") if s["folpipe.task.path"] == "fetch"]
        calls.sort(key=lambda span: span["folpipe.call"])
        assert [s.get("folpipe.replayed") for s in calls] == [False, None]
        assert calls[1]["folpipe.interrupted"] == "CancelledError"  # the timeout stopped it
        got.spans.clear()

        (wf / "subtasks/20_fetch/task.yaml").write_text(
            yaml.safe_dump({"output": ["facts"], "settings": {"timeout": 30}})
        )
        resumed = folpipe(env, "resume", wf, "--json")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert json.loads(resumed.stdout)["status"] == "completed"
        assert got.wait_for("invoke_workflow")
        spans = list(got.spans)

    [run] = operation(spans, "invoke_workflow")
    assert run.trace_id != failed_run.trace_id
    assert failed_run.trace_id in run.links  # the resume links to the run it resumes
    assert run["folpipe.replayed_calls"] == 1 and run["folpipe.model_calls"] == 1

    chats = [s for s in operation(spans, "chat") if s["folpipe.task.path"] == "fetch"]
    replayed = [s for s in chats if s["folpipe.replayed"]]
    live = [s for s in chats if not s["folpipe.replayed"]]
    assert len(replayed) == 1 and len(live) == 1
    [call] = replayed
    assert call["gen_ai.usage.input_tokens"] == 0 and call["gen_ai.usage.output_tokens"] == 0
    assert call["folpipe.cost_usd"] == 0
    assert call["folpipe.replayed.input_tokens"] > 0  # what it once cost
    assert live[0]["gen_ai.usage.input_tokens"] > 0

    plan = [s for s in operation(spans, "invoke_agent") if s["gen_ai.agent.name"] == "plan"]
    assert plan and all(s.get("folpipe.restored") is True for s in plan)
    assert {s.trace_id for s in spans if s.get("gen_ai.operation.name")} == {run.trace_id}
