"""The same contract for every SDK-backed provider, through the real SDK on 127.0.0.1.

Plain answer, multi-turn tool use, parallel tool calls, typed output, every error class and
usage; then each adapter's own wire details (prompt caching, JSON mode, capability check).
"""

from __future__ import annotations

import json
import socket
import sys

import pytest

from prefect_folpipe.errors import ConfigError, ProviderError
from prefect_folpipe.providers import (
    AssistantMessage,
    ModelRequest,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)

from .conftest import API_KEY, KEY_ENV, Harness, make_provider, make_wire
from .wire import Failure, Reply, Stall

WEATHER = ToolDefinition(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolDefinition("get_time", "Current time.", {"type": "object", "properties": {}})


def ask(text: str = "Hello", **kwargs: object) -> ModelRequest:
    return ModelRequest(
        system="You are terse.", messages=(UserMessage(text),), task_path="a/b", **kwargs
    )


def wire_messages(h: Harness) -> list[dict]:
    return h.last["messages"]


def tool_results_on_wire(h: Harness) -> list[tuple[str | None, str]]:
    """(call id, content) of every tool result in the last request, in order."""
    found: list[tuple[str | None, str]] = []
    for message in wire_messages(h):
        if h.kind == "anthropic" and isinstance(message["content"], list):
            found.extend(
                (b["tool_use_id"], b["content"])
                for b in message["content"]
                if b["type"] == "tool_result"
            )
        elif message["role"] == "tool":
            found.append((message.get("tool_call_id"), message["content"]))
    return found


async def test_plain_answer(harness: Harness) -> None:
    harness.wire.add(Reply(text="Hi there.", usage=(12, 3, 0, 0)))
    response = await harness.provider.complete(ask())
    assert response.text == "Hi there."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    assert response.model == f"{harness.kind}-test-model"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    sent = json.dumps(harness.last)
    assert "You are terse." in sent and "Hello" in sent
    assert harness.last["model"] == f"{harness.kind}-test-model"


async def test_multi_turn_tool_use(harness: Harness) -> None:
    harness.wire.add(
        Reply(tool_calls=[("call_1", "get_weather", {"city": "Paris"})]),
        Reply(text="Sunny in Paris."),
    )
    first = await harness.provider.complete(ask("Weather?", tools=(WEATHER,)))
    assert [(c.name, dict(c.arguments)) for c in first.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert first.stop_reason == "tool_use"
    sent_tools = json.dumps(harness.last["tools"])
    assert "get_weather" in sent_tools and '"city"' in sent_tools
    call = first.tool_calls[0]
    second = await harness.provider.complete(
        ModelRequest(
            system="You are terse.",
            tools=(WEATHER,),
            messages=(
                UserMessage("Weather?"),
                AssistantMessage(tool_calls=(call,)),
                ToolResultsMessage((ToolResult(call.id, call.name, "22C, sunny"),)),
            ),
        )
    )
    assert second.text == "Sunny in Paris."
    results = tool_results_on_wire(harness)
    assert [content for _, content in results] == ["22C, sunny"]
    if harness.kind != "ollama":  # Ollama's wire format has no call ids
        assert results[0][0] == call.id == "call_1"
    assert "Paris" in json.dumps(wire_messages(harness))


async def test_parallel_tool_calls(harness: Harness) -> None:
    harness.wire.add(
        Reply(
            tool_calls=[
                ("call_a", "get_weather", {"city": "Oslo"}),
                ("call_b", "get_time", {}),
            ]
        ),
        Reply(text="done"),
    )
    first = await harness.provider.complete(ask("both", tools=(WEATHER, TIME)))
    assert [c.name for c in first.tool_calls] == ["get_weather", "get_time"]
    ids = [c.id for c in first.tool_calls]
    assert len(set(ids)) == 2
    results = tuple(ToolResult(c.id, c.name, f"result of {c.name}") for c in first.tool_calls)
    await harness.provider.complete(
        ModelRequest(
            system="s",
            tools=(WEATHER, TIME),
            messages=(
                UserMessage("both"),
                AssistantMessage(tool_calls=first.tool_calls),
                ToolResultsMessage(results),
            ),
        )
    )
    on_wire = tool_results_on_wire(harness)
    assert [content for _, content in on_wire] == ["result of get_weather", "result of get_time"]
    if harness.kind != "ollama":
        assert [cid for cid, _ in on_wire] == ids


async def test_error_result_is_marked(harness: Harness) -> None:
    harness.wire.add(Reply(text="ok"))
    call = ToolCall("call_9", "get_time", {})
    await harness.provider.complete(
        ModelRequest(
            system="s",
            tools=(TIME,),
            messages=(
                UserMessage("t"),
                AssistantMessage(text="checking", tool_calls=(call,)),
                ToolResultsMessage((ToolResult("call_9", "get_time", "boom", is_error=True),)),
            ),
        )
    )
    sent = json.dumps(wire_messages(harness))
    assert "boom" in sent
    assert '"is_error": true' in sent if harness.kind == "anthropic" else "ERROR: boom" in sent


async def test_typed_output(harness: Harness) -> None:
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}},
        "required": ["approved"],
    }
    harness.wire.add(Reply(text='{"approved": true}'))
    response = await harness.provider.complete(ask("Review", output_schema=schema))
    assert json.loads(response.text) == {"approved": True}
    body = harness.last
    if harness.kind == "openai":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == schema
    elif harness.kind == "ollama":
        assert body["format"] == schema
    else:  # Claude follows the injected JSON instruction; structured outputs are opt-in
        assert "output_config" not in body


async def test_json_mode_off(harness: Harness) -> None:
    provider = make_provider(harness.kind, harness.wire, json_mode=False)
    harness.wire.add(Reply(text="{}"))
    await provider.complete(ask(output_schema={"type": "object"}))
    assert not {"response_format", "format", "output_config"} & set(harness.last)
    await provider.aclose()


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "rate_limit"),
        (500, "server_error"),
        (503, "server_error"),
        (529, "server_error"),
        (401, "auth"),
        (403, "auth"),
        (400, "bad_request"),
        (404, "bad_request"),
        (422, "bad_request"),
    ],
)
async def test_http_errors_map_to_kinds(harness: Harness, status: int, kind: str) -> None:
    harness.wire.add(Failure(status, "something went wrong"))
    with pytest.raises(ProviderError) as caught:
        await harness.provider.complete(ask())
    error = caught.value
    assert error.kind == kind
    assert error.retryable is (kind in ("rate_limit", "server_error"))
    assert error.provider == harness.kind
    assert str(status) in str(error)
    assert len(harness.wire.requests) == 1, "the SDK must not retry on its own"


async def test_rate_limit_honours_retry_after(harness: Harness) -> None:
    harness.wire.add(Failure(429, "slow down", headers={"Retry-After": "7"}))
    with pytest.raises(ProviderError) as caught:
        await harness.provider.complete(ask())
    assert caught.value.kind == "rate_limit"
    assert caught.value.retry_after == pytest.approx(7.0)


async def test_timeout_is_retryable(harness: Harness) -> None:
    provider = make_provider(harness.kind, harness.wire, timeout=0.3)
    harness.wire.add(Stall(1.0))
    with pytest.raises(ProviderError) as caught:
        await provider.complete(ask())
    assert caught.value.kind == "timeout"
    assert caught.value.retryable
    await provider.aclose()


async def test_connection_refused_is_retryable(harness: Harness) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make_provider(harness.kind, harness.wire, base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderError) as caught:
        await provider.complete(ask())
    assert caught.value.kind == "timeout"
    await provider.aclose()


async def test_error_messages_never_contain_the_key(harness: Harness) -> None:
    if harness.kind == "ollama":
        pytest.skip("ollama sends a key only when one is configured")
    harness.wire.add(Failure(401, f"invalid x-api-key {API_KEY}"))
    with pytest.raises(ProviderError) as caught:
        await harness.provider.complete(ask())
    assert API_KEY not in str(caught.value)
    assert "[REDACTED]" in str(caught.value)


async def test_usage_counts(harness: Harness) -> None:
    harness.wire.add(Reply(text="x", usage=(100, 20, 60, 30)))
    usage = (await harness.provider.complete(ask())).usage
    if harness.kind == "anthropic":  # input_tokens counts every prompt token
        assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
            190,
            60,
            30,
        )
    elif harness.kind == "openai":
        assert (usage.input_tokens, usage.cache_read_tokens) == (100, 60)
    else:
        assert usage.input_tokens == 100
    assert usage.output_tokens == 20


async def test_settings_reach_the_wire(harness: Harness) -> None:
    provider = make_provider(harness.kind, harness.wire, temperature=0.2, max_tokens=123)
    harness.wire.add(Reply(text="x"))
    await provider.complete(ask())
    body = harness.last
    if harness.kind == "ollama":
        assert body["options"] == {"temperature": 0.2, "num_predict": 123}
    else:
        assert body["temperature"] == 0.2
        assert 123 in (body.get("max_tokens"), body.get("max_completion_tokens"))
    await provider.aclose()


async def test_request_model_overrides_block(harness: Harness) -> None:
    harness.wire.add(Reply(text="x"))
    await harness.provider.complete(ask(model="other-model"))
    assert harness.last["model"] == "other-model"


async def test_truncated_tool_call_is_an_error(harness: Harness) -> None:
    harness.wire.add(Reply(tool_calls=[("c1", "get_time", {})], stop="max_tokens"))
    with pytest.raises(ProviderError) as caught:
        await harness.provider.complete(ask(tools=(TIME,)))
    assert caught.value.code == "FP325"
    assert not caught.value.retryable


async def test_truncated_text_is_reported(harness: Harness) -> None:
    harness.wire.add(Reply(text="partial", stop="max_tokens"))
    response = await harness.provider.complete(ask())
    assert (response.text, response.stop_reason) == ("partial", "max_tokens")


async def test_api_key_sent_from_env(harness: Harness) -> None:
    if harness.kind == "ollama":
        pytest.skip("ollama takes no key by default")
    harness.wire.add(Reply(text="x"))
    await harness.provider.complete(ask())
    headers = harness.wire.headers[-1]
    assert API_KEY in (headers.get("x-api-key"), headers.get("authorization", "")[7:])


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_missing_key_names_the_variable(http, kind: str, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    wire = make_wire(kind, http)
    provider = make_provider(kind, wire, base_url=None if kind == "openai" else wire.base_url)
    with pytest.raises(ConfigError) as caught:
        await provider.complete(ask())
    assert caught.value.code == "FP322"
    assert KEY_ENV in str(caught.value)
    assert wire.requests == []


@pytest.mark.parametrize("kind", ["anthropic", "openai", "ollama"])
async def test_key_from_secret_block(http, kind: str) -> None:
    asked: list[str] = []

    def resolver(name: str) -> str:
        asked.append(name)
        return "secret-from-block-123"

    wire = make_wire(kind, http)
    wire.add(Reply(text="x"))
    provider = make_provider(
        kind, wire, api_key_env=None, api_key_secret="llm-key", secret_resolver=resolver
    )
    await provider.complete(ask())
    headers = wire.headers[-1]
    sent = headers.get("x-api-key") or headers.get("authorization", "")
    assert sent.endswith("secret-from-block-123")
    assert asked == ["llm-key"]
    await provider.aclose()


async def test_secret_block_failure_names_the_block(http) -> None:
    def resolver(name: str) -> str:
        raise ValueError("no such block")

    wire = make_wire("anthropic", http)
    provider = make_provider(
        "anthropic", wire, api_key_env=None, api_key_secret="llm-key", secret_resolver=resolver
    )
    with pytest.raises(ConfigError) as caught:
        await provider.complete(ask())
    assert "'llm-key'" in str(caught.value) and caught.value.code == "FP322"


@pytest.mark.parametrize("kind", ["anthropic", "openai", "ollama"])
async def test_missing_sdk_gives_install_hint(http, kind: str, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    wire = make_wire(kind, http)
    provider = make_provider(kind, wire)
    monkeypatch.setitem(sys.modules, kind, None)
    with pytest.raises(ConfigError) as caught:
        await provider.complete(ask())
    assert caught.value.code == "FP321"
    assert f"pip install 'prefect-folpipe[{kind}]'" in (caught.value.hint or "")


async def test_no_model_configured(http, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    wire = make_wire("openai", http)
    provider = make_provider("openai", wire, model=None)
    with pytest.raises(ConfigError) as caught:
        await provider.complete(ask())
    assert caught.value.code == "FP326"
