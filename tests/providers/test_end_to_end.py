"""A whole workflow run through Prefect with a real SDK (on 127.0.0.1): an http tool, usage,
a budget, then --record and an offline --provider replay of the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from werkzeug import Request, Response

from prefect_folpipe.compile.api import arun_workflow
from prefect_folpipe.compile.options import RunOptions

from .conftest import API_KEY, KEY_ENV, make_wire
from .wire import Reply

pytestmark = pytest.mark.prefect

ROOT = """name: weather_report
providers:
  default: claude
  claude:
    type: anthropic
    model: claude-sonnet-4-5
    base_url: {base_url}
    api_key_env: {key_env}
settings:
  max_retries: 0
  {budget}
security:
  allow_private_network: true
output:
  summary: str
"""
TOOLS = """## get_weather
> type: http
> method: GET
> url: {url}
> headers: {{"Authorization": "Bearer ${{{key_env}}}"}}
> env: [{key_env}]

Weather for a city.

**Parameters:**
- city (str): the city
"""


def weather_workflow(tmp_path: Path, wire, budget: str = "") -> Path:  # type: ignore[no-untyped-def]
    root = tmp_path / "wf"
    root.mkdir()
    (root / "task.yaml").write_text(
        ROOT.format(base_url=wire.base_url, key_env=KEY_ENV, budget=budget)
    )
    (root / "instructions.md").write_text("Report the weather in Paris using the tool.\n")
    url = wire.server.url_for("/weather")
    (root / "tools.md").write_text(TOOLS.format(url=url, key_env=KEY_ENV))
    return root


def weather_api(request: Request) -> Response:
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    body = {"city": request.args["city"], "forecast": "sunny", "celsius": 24}
    return Response(json.dumps(body), content_type="application/json")


@pytest.fixture
def scripted_wire(http, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, API_KEY)
    http.expect_request("/weather").respond_with_handler(weather_api)
    wire = make_wire("anthropic", http)
    wire.add(
        Reply(tool_calls=[("toolu_1", "get_weather", {"city": "Paris"})], usage=(300, 40, 0, 250)),
        Reply(text='```json\n{"summary": "Sunny, 24C"}\n```', usage=(360, 20, 250, 0)),
    )
    return wire


async def test_record_then_replay_a_real_run(prefect_harness, tmp_path: Path, scripted_wire):  # type: ignore[no-untyped-def]
    root = weather_workflow(tmp_path, scripted_wire)
    cassette = tmp_path / "cassette.yaml"
    recorded = await arun_workflow(root, options=RunOptions(record=cassette, fresh=True))
    assert recorded.status == "completed", recorded.error
    assert recorded.context["summary"] == "Sunny, 24C"
    assert len(scripted_wire.requests) == 2
    tool_result = scripted_wire.requests[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and "sunny" in tool_result["content"]
    assert scripted_wire.requests[0]["system"][0]["cache_control"] == {"type": "ephemeral"}
    usage = recorded.tasks[0]["usage"] if recorded.tasks else {}
    assert usage.get("input_tokens") == 300 + 250 + 360 + 250

    text = cassette.read_text()
    assert API_KEY not in text and str(root) not in text
    assert len(yaml.safe_load(text)["interactions"]) == 2

    replayed = await arun_workflow(
        root, options=RunOptions(provider="replay", replies=cassette, fresh=True)
    )
    assert replayed.status == "completed", replayed.error
    assert replayed.context["summary"] == "Sunny, 24C"
    assert len(scripted_wire.requests) == 2, "the replay made no model call"


async def test_token_budget_stops_the_second_call(prefect_harness, tmp_path: Path, scripted_wire):  # type: ignore[no-untyped-def]
    root = weather_workflow(tmp_path, scripted_wire, budget="token_budget: 500")
    result = await arun_workflow(root, options=RunOptions(fresh=True))
    assert result.status == "failed"
    assert "token budget of the workflow reached" in str(result.error)
    assert len(scripted_wire.requests) == 1, "the call over budget was never made"


def test_cli_record_then_replay(prefect_harness, tmp_path: Path, scripted_wire) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    root = weather_workflow(tmp_path, scripted_wire)
    cassette = tmp_path / "ci.json"
    runner = CliRunner()
    recorded = runner.invoke(cli, ["run", str(root), "--record", str(cassette), "--json"])
    assert recorded.exit_code == 0, recorded.output
    assert json.loads(recorded.stdout)["context"]["summary"] == "Sunny, 24C"
    assert json.loads(cassette.read_text())["providers"] == ["anthropic"]

    replay = ["run", str(root), "--provider", "replay", "--replies", str(cassette)]
    replayed = runner.invoke(cli, [*replay, "--fresh", "--json"])
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout)["context"]["summary"] == "Sunny, 24C"
    assert len(scripted_wire.requests) == 2


async def test_model_without_tool_support_fails_before_the_run(
    prefect_harness, tmp_path: Path, http
):  # type: ignore[no-untyped-def]
    wire = make_wire("ollama", http, capabilities=["completion"])
    root = tmp_path / "wf"
    root.mkdir()
    (root / "task.yaml").write_text(
        f"name: local\nproviders:\n  default: local\n  local: {{type: ollama, model: tiny, "
        f"base_url: '{wire.base_url}'}}\n"
    )
    (root / "instructions.md").write_text("Use the tool.\n")
    (root / "tools.md").write_text(TOOLS.format(url=http.url_for("/weather"), key_env=KEY_ENV))
    result = await arun_workflow(root, options=RunOptions(fresh=True))
    assert result.status == "failed"
    assert getattr(result.error, "code", None) == "FP323"
    assert "cannot call tools" in str(result.error)
    assert wire.requests == [], "no chat request was sent"
