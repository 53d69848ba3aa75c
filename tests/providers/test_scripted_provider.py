"""The scripted provider: the replies-file format (docs/providers.md), offline and deterministic."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from prefect_folpipe.errors import RETRYABLE_KINDS, ConfigError, ProviderError
from prefect_folpipe.providers import (
    AssistantMessage,
    ModelRequest,
    ToolCall,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from prefect_folpipe.providers.scripted import (
    ScriptedProvider,
    estimate_tokens,
    load_replies,
    parse_replies,
)


def request(task_path: str = "a", task_name: str | None = None, **kwargs) -> ModelRequest:
    messages = kwargs.pop("messages", (UserMessage("{}"),))
    return ModelRequest(
        system=kwargs.pop("system", "You are a task."),
        messages=messages,
        task_path=task_path,
        task_name=task_name or task_path.rsplit("/", 1)[-1],
        **kwargs,
    )


async def test_each_task_consumes_its_own_list_and_the_last_entry_repeats() -> None:
    provider = ScriptedProvider({"tasks": {"a": ["one", "two"], "b": ["bee"]}, "default": "dflt"})
    answers = [(await provider.complete(request("a"))).text for _ in range(4)]
    assert answers == ["one", "two", "two", "two"]
    assert (await provider.complete(request("b"))).text == "bee"
    assert (await provider.complete(request("c"))).text == "dflt"


async def test_path_is_matched_before_name_and_default_lists_are_per_task() -> None:
    provider = ScriptedProvider(
        {
            "tasks": {"x/review": ["by path"], "review": ["by name"]},
            "default": ["d1", "d2"],
        }
    )
    assert (await provider.complete(request("x/review"))).text == "by path"
    assert (await provider.complete(request("y/review"))).text == "by name"
    assert (await provider.complete(request("p"))).text == "d1"
    assert (await provider.complete(request("q"))).text == "d1"
    assert (await provider.complete(request("p"))).text == "d2"


async def test_output_entry_is_a_fenced_json_block() -> None:
    provider = ScriptedProvider({"default": {"output": {"approved": True, "n": 3}}})
    text = (await provider.complete(request())).text
    assert text.startswith("```json\n") and text.endswith("\n```")
    assert json.loads(text.removeprefix("```json\n").removesuffix("\n```")) == {
        "approved": True,
        "n": 3,
    }


async def test_tool_calls_get_unique_ids_and_optional_text() -> None:
    entry = {
        "text": "let me look",
        "tool_calls": [
            {"name": "search", "arguments": {"q": "prefect"}},
            {"name": "clock"},
        ],
    }
    provider = ScriptedProvider({"default": entry})
    response = await provider.complete(request())
    assert response.text == "let me look"
    assert [c.name for c in response.tool_calls] == ["search", "clock"]
    assert response.tool_calls[0].arguments == {"q": "prefect"}
    assert response.tool_calls[1].arguments == {}
    assert len({c.id for c in response.tool_calls}) == 2
    assert response.stop_reason == "tool_use"


@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "timeout", "auth", "bad_request"])
async def test_every_error_kind_raises_a_classified_provider_error(kind: str) -> None:
    provider = ScriptedProvider({"default": [{"error": kind}, "recovered"]})
    with pytest.raises(ProviderError) as info:
        await provider.complete(request())
    assert info.value.kind == kind
    assert info.value.retryable is (kind in RETRYABLE_KINDS)
    assert (await provider.complete(request())).text == "recovered"


async def test_echo_answers_with_the_whole_request() -> None:
    provider = ScriptedProvider({"default": {"echo": True}})
    messages = (
        UserMessage('{"topic": "prefect"}'),
        AssistantMessage("looking", (ToolCall("c1", "search", {"q": "x"}),)),
        ToolResultsMessage((ToolResult("c1", "search", "found it"),)),
    )
    text = (await provider.complete(request(system="SYSTEM PROMPT", messages=messages))).text
    order = ["SYSTEM PROMPT", '{"topic": "prefect"}', "looking", "c1] search", "found it"]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)


async def test_latency_and_delay_are_awaited_so_calls_overlap() -> None:
    provider = ScriptedProvider({"latency_s": 0.1, "default": {"text": "ok", "delay": 0.1}})
    started = time.perf_counter()
    answers = await asyncio.gather(*(provider.complete(request(f"t{i}")) for i in range(10)))
    elapsed = time.perf_counter() - started
    assert [a.text for a in answers] == ["ok"] * 10
    assert 0.2 <= elapsed < 1.0


async def test_usage_is_a_deterministic_estimate() -> None:
    provider = ScriptedProvider({"default": "12345678"})
    first = await provider.complete(request())
    second = await provider.complete(request())
    assert first.usage == second.usage
    assert first.usage.output_tokens == estimate_tokens("12345678") == 2
    assert first.usage.input_tokens > 0


async def test_a_task_without_entries_and_no_default_is_a_config_error() -> None:
    provider = ScriptedProvider({"tasks": {"a": "x"}})
    with pytest.raises(ConfigError) as info:
        await provider.complete(request("b"))
    assert info.value.code == "FP306"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("- just a list\n", "top level must be a mapping"),
        ("tasks: {a: [{error: boom}]}\n", "error must be one of"),
        ("tasks: {a: [{outptu: {}}]}\n", "unknown key"),
        ("default: {tool_calls: [{arguments: {}}]}\n", "needs a `name`"),
        ("default: {tool_calls: [{name: t, arguments: [1]}]}\n", "arguments must be a mapping"),
        ("latency_s: -1\n", "latency_s must be a number"),
        ("tasks: {a: []}\n", "empty"),
        ("tasks: {a: [42]}\n", "must be a string or a mapping"),
        ("tasks: [a, b]\n", "`tasks` must map"),
        ("defaults: ok\n", "unknown top-level key"),
        ("tasks: {a: [{delay: 1}]}\n", "needs one of"),
        ("tasks: {a: [\n", "not valid YAML"),
    ],
)
def test_malformed_replies_files_are_config_errors_with_file_and_hint(
    tmp_path: Path, content: str, fragment: str
) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_replies(file)
    assert fragment in str(info.value)
    assert str(file) in str(info.value)
    assert info.value.hint and info.value.code == "FP305"


def test_missing_replies_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        ScriptedProvider(tmp_path / "nope.yaml")
    assert info.value.code == "FP304"
    assert "nope.yaml" in str(info.value)


def test_the_architecture_example_parses(tmp_path: Path) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text(
        """
tasks:
  review_cv:
    - {output: {approved: false, feedback: "add metrics"}}
    - {output: {approved: true, feedback: "ok"}}
  fetch_data:
    - tool_calls: [{name: search_api, arguments: {query: "prefect"}}]
    - "Plain final text"
  flaky:
    - error: rate_limit
    - "recovered"
default: "ok"
"""
    )
    script = load_replies(file)
    assert set(script.tasks) == {"review_cv", "fetch_data", "flaky"}
    assert script.tasks["fetch_data"][0].tool_calls == (("search_api", {"query": "prefect"}),)
    assert script.default[0].text == "ok"


def test_json_replies_files_are_accepted() -> None:
    script = parse_replies(json.loads('{"default": [{"output": {"a": 1}}]}'))
    assert script.default[0].has_output and script.default[0].output == {"a": 1}
