"""The trace of a run as Arize Phoenix stores it: spans exported by ``folpipe run`` over
OTLP/HTTP, read back through Phoenix's REST API. Needs ``FOLPIPE_PHOENIX`` (the ``phoenix``
executable of an environment with ``arize-phoenix``); skipped without it."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from .phoenix import phoenix, wait_for
from .test_otel_export import SECRET, _files, folpipe, write

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(900)]
PHOENIX = os.environ.get("FOLPIPE_PHOENIX", "")


@pytest.fixture(scope="module")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not PHOENIX or not Path(PHOENIX).exists():
        pytest.skip(
            "FOLPIPE_PHOENIX does not name a phoenix executable (pip install arize-phoenix)"
        )
    with phoenix(PHOENIX, tmp_path_factory.mktemp("phoenix")) as url:
        yield url


def test_phoenix_shows_the_runs_tree(phoenix_url, cli_env, tmp_path) -> None:
    project = f"folpipe-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in cli_env.items() if not k.startswith("OTEL_")}
    env |= {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{phoenix_url}/v1/traces",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "FOLPIPE_OTEL_TEST_TOKEN": SECRET,
    }
    proc = folpipe(env, "run", write(tmp_path / "wf", _files()), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["status"] == "completed"
    spans = wait_for(phoenix_url, project, "invoke_workflow")
    by_id = {span["context"]["span_id"]: span for span in spans}

    def operation(name: str) -> list[dict]:
        return [s for s in spans if s["attributes"].get("gen_ai.operation.name") == name]

    [run] = operation("invoke_workflow")
    agents, chats, tools = operation("invoke_agent"), operation("chat"), operation("execute_tool")
    assert sorted(s["attributes"]["gen_ai.agent.name"] for s in agents) == ["fetch", "write"]
    assert len(chats) == 3
    assert sorted(s["attributes"]["gen_ai.tool.name"] for s in tools) == ["lookup", "today"]
    assert {s["context"]["trace_id"] for s in spans} == {run["context"]["trace_id"]}

    def ancestors(span: dict) -> list[dict]:
        chain = []
        while span.get("parent_id") in by_id:
            span = by_id[span["parent_id"]]
            chain.append(span)
        return chain

    for span in chats + tools:
        owner = next(a for a in ancestors(span) if a["attributes"].get("gen_ai.operation.name"))
        assert owner in agents
    assert all(run in ancestors(agent) for agent in agents)
    assert all(chat["attributes"]["gen_ai.usage.input_tokens"] > 0 for chat in chats)
    assert {chat["span_kind"] for chat in chats} == {"LLM"}  # Phoenix read them as model calls
    assert SECRET not in json.dumps(spans)
