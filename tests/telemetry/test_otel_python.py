"""Tracing in Python: off (and no OpenTelemetry import) without a provider or the variables;
with a tracer provider the user configured, the spans go there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_otel_export import _files, write

NO_TRACING = """
import sys
from prefect_folpipe import telemetry
with telemetry.run_span("wf") as run:
    assert run.traceparent is None
    with telemetry.agent_span("a", agent=True, phase="single", iteration=None, attempt=1,
                              label="a", traceparent=run.traceparent) as span:
        with telemetry.chat_span("scripted", None, None) as chat:
            chat.answered(None)
        with telemetry.tool_span(None, "shell") as tool:
            tool.done("", False, code=None, attempts=1, duration_s=0.0)
        span.finish({})
    run.finish("completed", [], 0.0)
print("opentelemetry" in sys.modules)
"""

USER_PROVIDER = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from prefect_folpipe import run_workflow

result = run_workflow(sys.argv[1])
spans = [
    {"name": s.name, "trace": s.context.trace_id, "attributes": dict(s.attributes or {})}
    for s in exporter.get_finished_spans()
]
print(json.dumps({"status": result.status, "spans": spans}, default=str))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    root = str(Path(__file__).parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    return env | extra


def test_without_a_provider_or_variables_nothing_imports_opentelemetry() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_TRACING], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_variables_are_switched_off_the_standard_way() -> None:
    from prefect_folpipe.telemetry import export_requested

    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert export_requested(endpoint)
    assert export_requested({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/x"})
    assert not export_requested({})
    assert not export_requested({**endpoint, "OTEL_SDK_DISABLED": "true"})
    assert not export_requested({**endpoint, "OTEL_TRACES_EXPORTER": "none"})


@pytest.mark.prefect
def test_spans_go_to_the_provider_the_user_configured(cli_env, tmp_path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    wf = write(tmp_path / "wf", _files())
    env = _env(PREFECT_API_URL=cli_env["PREFECT_API_URL"], FOLPIPE_OTEL_TEST_TOKEN="x" * 12)
    done = subprocess.run(
        [sys.executable, "-c", USER_PROVIDER, str(wf)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "completed"
    spans = report["spans"]
    operations = [span["attributes"].get("gen_ai.operation.name") for span in spans]
    assert operations.count("invoke_workflow") == 1
    assert operations.count("invoke_agent") == 2
    assert operations.count("chat") == 3 and operations.count("execute_tool") == 2
    assert len({span["trace"] for span in spans}) == 1


def test_the_exporters_header_values_are_masked_everywhere(monkeypatch) -> None:
    from prefect_folpipe.redaction import SECRETS
    from prefect_folpipe.telemetry import setup

    token = "bGFuZ2Z1c2U6c2VjcmV0LTk5MTI="
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Basic%20{token},x-team=ops")
    setup._register_header_secrets()
    assert token not in SECRETS.text(f"sent with {token}")
    assert "x-team" in SECRETS.text("x-team")  # a header's name is not secret


def test_message_content_takes_the_conventions_shapes_and_is_masked(monkeypatch) -> None:
    from prefect_folpipe._messages import (
        AssistantMessage,
        ToolCall,
        ToolResult,
        ToolResultsMessage,
        UserMessage,
    )
    from prefect_folpipe.telemetry import content

    secret = "tok-0c1d2e3f4a5b"
    monkeypatch.setenv("SERVICE_TOKEN", secret)
    monkeypatch.delenv(content.CAPTURE_VAR, raising=False)
    assert not content.capture_enabled()
    monkeypatch.setenv(content.CAPTURE_VAR, "True")
    assert content.capture_enabled()
    messages = [
        UserMessage(f"use {secret}"),
        AssistantMessage("", (ToolCall("c1", "lookup", {"key": secret}),)),
        ToolResultsMessage((ToolResult("c1", "lookup", "found it"),)),
    ]
    shaped = json.loads(content.input_messages(messages))
    assert [m["role"] for m in shaped] == ["user", "assistant", "tool"]
    assert shaped[1]["parts"] == [
        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"key": "[REDACTED]"}}
    ]
    assert shaped[2]["parts"][0] == {
        "type": "tool_call_response",
        "id": "c1",
        "response": "found it",
    }
    assert secret not in content.input_messages(messages)
    assert json.loads(content.instructions("Be brief.")) == [
        {"type": "text", "content": "Be brief."}
    ]
