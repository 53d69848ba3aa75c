"""``folpipe run`` with ``OTEL_EXPORTER_OTLP_ENDPOINT`` exports GenAI spans to a real OTLP/HTTP
receiver (tests/telemetry/receiver.py): the tree, the counts, content only on opt-in, no secret."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from .receiver import Receiver, Span, otlp_receiver

pytestmark = pytest.mark.prefect

SECRET = "s3cr3t-tool-value-4471"
MARKER = "Fetch the facts with both tools (instructions marker 7731)."

TOOLS_MD = """## today
> type: shell

Say which day it is.

```bash
echo "monday"
```

## lookup

Look a number up.

```python
def lookup(n: int) -> str:
    import os
    return f"value {n}, token {os.environ['FOLPIPE_OTEL_TEST_TOKEN']}"
```
"""


def _files() -> dict[str, Any]:
    fetch = [
        {
            "tool_calls": [
                {"name": "today", "arguments": {}},
                {"name": "lookup", "arguments": {"n": 3}},
            ]
        },
        {"output": {"facts": "monday, 3"}},
    ]
    return {
        "task.yaml": {
            "name": "traced",
            "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
            "subtasks": {"execution_type": "sequential"},
        },
        "replies.yaml": {"tasks": {"fetch": fetch, "write": [{"output": {"text": "done"}}]}},
        "subtasks/10_fetch/instructions.md": MARKER,
        "subtasks/10_fetch/task.yaml": {"output": ["facts"]},
        "subtasks/10_fetch/tools.md": TOOLS_MD,
        "subtasks/10_fetch/hooks/pre_run.py": "def run(ctx, task):\n    ctx.context['ready'] = 1\n",
        "subtasks/20_write/instructions.md": "Write it up.",
        "subtasks/20_write/task.yaml": {"output": ["text"]},
    }


def write(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content)
        target.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def receiver() -> Iterator[tuple[str, Receiver]]:
    with otlp_receiver() as found:
        yield found


def folpipe(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


def traced_env(cli_env: dict[str, str], endpoint: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in cli_env.items() if not k.startswith("OTEL_")}
    env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "FOLPIPE_OTEL_TEST_TOKEN": SECRET, **extra}
    return env


def by_id(spans: list[Span]) -> dict[str, Span]:
    return {span.span_id: span for span in spans}


def ancestors(span: Span, index: dict[str, Span]) -> list[Span]:
    found = []
    while span.parent_id and span.parent_id in index:
        span = index[span.parent_id]
        found.append(span)
    return found


def operation(spans: list[Span], name: str) -> list[Span]:
    return [span for span in spans if span.get("gen_ai.operation.name") == name]


def test_a_run_exports_one_trace_of_genai_spans(cli_env, receiver, tmp_path):
    endpoint, got = receiver
    files = _files()
    files["subtasks/20_write/task.yaml"]["approval"] = {
        "prompt": "Write it?",
        "input": {"approved": "bool"},
    }
    wf = write(tmp_path / "wf", files)
    env = traced_env(cli_env, endpoint, OTEL_SERVICE_NAME="otel-test")
    proc = folpipe(env, "run", wf, "--json", "--approve", "approved=yes")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert got.wait_for("invoke_workflow"), "no run span arrived"
    spans = list(got.spans)
    index = by_id(spans)

    [run] = operation(spans, "invoke_workflow")
    assert run["gen_ai.agent.name"] == "traced"
    assert run.resource["service.name"] == "otel-test"
    agents = operation(spans, "invoke_agent")
    assert sorted(span["gen_ai.agent.name"] for span in agents) == ["fetch", "write"]
    chats = operation(spans, "chat")
    assert len(chats) == 3  # fetch: tool calls, then the answer; write: the answer
    tools = operation(spans, "execute_tool")
    assert sorted(span["gen_ai.tool.name"] for span in tools) == ["lookup", "today"]
    assert {span["folpipe.tool.kind"] for span in tools} == {"shell", "python"}
    assert all(span["folpipe.tool.outcome"] == "ok" for span in tools)

    # one trace; chat and execute_tool inside their invoke_agent, every agent inside the run,
    # the run inside Prefect's flow-run span
    assert {span.trace_id for span in spans} == {run.trace_id}
    for span in chats + tools:
        owner = next(a for a in ancestors(span, index) if a.get("gen_ai.operation.name"))
        assert owner.get("gen_ai.operation.name") == "invoke_agent"
        assert owner["gen_ai.agent.name"] == span["folpipe.task.path"]
    for agent in agents:
        assert run in ancestors(agent, index)
    assert any(a.get("prefect.run.type") == "flow" for a in ancestors(run, index))
    # Prefect's task-run span sits between the run and each pass
    for agent in agents:
        assert index[agent.parent_id].get("prefect.run.type") == "task"

    # the hook inside its pass, the approval gate inside the run
    [hook] = [span for span in spans if span.name == "hook pre_run"]
    assert index[hook.parent_id]["gen_ai.agent.name"] == "fetch"
    [gate] = [span for span in spans if span.get("folpipe.operation") == "approval"]
    assert gate["folpipe.approval.source"] == "--approve" and run in ancestors(gate, index)

    for chat in chats:
        assert chat["gen_ai.provider.name"] == "scripted"
        assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
        assert chat["folpipe.replayed"] is False
    assert run["folpipe.model_calls"] == 3
    total = sum(chat["gen_ai.usage.input_tokens"] for chat in chats)
    assert run["gen_ai.usage.input_tokens"] == total

    everything = "\n".join(span.text() for span in spans)
    assert MARKER not in everything  # no content without the opt-in
    assert "gen_ai.input.messages" not in everything
    assert SECRET not in everything
    assert json.loads(proc.stdout)["status"] == "completed"


def test_content_only_with_the_opt_in_and_never_a_secret(cli_env, receiver, tmp_path):
    endpoint, got = receiver
    files = _files()
    # the model also echoes the secret in a tool argument: masked there too
    files["replies.yaml"]["tasks"]["fetch"][0]["tool_calls"][1]["arguments"] = {"n": SECRET}
    files["subtasks/10_fetch/tools.md"] = TOOLS_MD.replace("n: int", "n: str")
    wf = write(tmp_path / "wf", files)
    env = traced_env(cli_env, endpoint, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    proc = folpipe(env, "run", wf, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert got.wait_for("invoke_workflow")
    spans = list(got.spans)
    chats = [s for s in operation(spans, "chat") if s["folpipe.task.path"] == "fetch"]
    assert all(MARKER in chat["gen_ai.system_instructions"] for chat in chats)
    assert all("gen_ai.input.messages" in chat.attributes for chat in chats)
    [lookup] = [s for s in operation(spans, "execute_tool") if s["gen_ai.tool.name"] == "lookup"]
    assert "[REDACTED]" in lookup["gen_ai.tool.call.result"]
    assert "[REDACTED]" in lookup["gen_ai.tool.call.arguments"]
    assert SECRET not in "\n".join(span.text() for span in spans)
