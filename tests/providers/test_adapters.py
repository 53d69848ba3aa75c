"""Adapter-specific wire details: prompt caching, refusals, Ollama's capability check."""

from __future__ import annotations

from pathlib import Path

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
from prefect_folpipe.providers._sdk import retry_after_seconds
from prefect_folpipe.workflow.config import ProviderConfig, TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, ResolvedProvider, Task, ToolSpec

from .conftest import API_KEY, KEY_ENV, make_provider, make_wire
from .wire import Failure, Reply

TOOL = ToolDefinition("lookup", "Look up.", {"type": "object", "properties": {}})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)


def request(**kwargs: object) -> ModelRequest:
    return ModelRequest(system="Stable instructions.", messages=(UserMessage("go"),), **kwargs)


async def test_anthropic_caches_the_stable_prefix(http) -> None:
    wire = make_wire("anthropic", http)
    provider = make_provider("anthropic", wire)
    wire.add(Reply(text="x"))
    await provider.complete(request(tools=(TOOL, TOOL.__class__("other", "o", {"type": "object"}))))
    body = wire.requests[-1]
    assert body["system"] == [
        {"type": "text", "text": "Stable instructions.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    await provider.aclose()


async def test_anthropic_prompt_caching_off(http) -> None:
    wire = make_wire("anthropic", http)
    provider = make_provider("anthropic", wire, prompt_caching=False)
    wire.add(Reply(text="x"))
    await provider.complete(request(tools=(TOOL,)))
    assert "cache_control" not in str(wire.requests[-1])
    await provider.aclose()


async def test_anthropic_merges_tool_results_and_follow_up(http) -> None:
    """A repair prompt after tool results must not make two user turns in a row."""
    wire = make_wire("anthropic", http)
    provider = make_provider("anthropic", wire)
    wire.add(Reply(text="x"))
    call = ToolCall("t1", "lookup", {})
    await provider.complete(
        ModelRequest(
            system="s",
            messages=(
                UserMessage("go"),
                AssistantMessage(tool_calls=(call,)),
                ToolResultsMessage((ToolResult("t1", "lookup", "found"),)),
                UserMessage("now answer in JSON"),
            ),
        )
    )
    roles = [m["role"] for m in wire.requests[-1]["messages"]]
    assert roles == ["user", "assistant", "user"]
    last = wire.requests[-1]["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    await provider.aclose()


async def test_anthropic_structured_output_opt_in(http) -> None:
    wire = make_wire("anthropic", http)
    provider = make_provider("anthropic", wire, json_mode=True)
    wire.add(Reply(text="{}"))
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    await provider.complete(request(output_schema=schema))
    assert wire.requests[-1]["output_config"] == {
        "format": {"type": "json_schema", "schema": schema}
    }
    await provider.aclose()


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_refusal_is_a_non_retryable_error(http, kind: str) -> None:
    wire = make_wire(kind, http)
    provider = make_provider(kind, wire)
    wire.add(Reply(text="no", stop="refusal"))
    with pytest.raises(ProviderError) as caught:
        await provider.complete(request(task_path="review"))
    assert caught.value.code == "FP324"
    assert "'review'" in str(caught.value)
    assert not caught.value.retryable
    await provider.aclose()


async def test_openai_compatible_server_needs_no_key(http, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    wire = make_wire("openai", http)
    provider = make_provider("openai", wire)
    wire.add(Reply(text="local"))
    assert (await provider.complete(request())).text == "local"
    assert "max_tokens" not in wire.requests[-1]
    await provider.aclose()


async def test_openai_invalid_tool_arguments_reach_the_tool_runtime(http) -> None:
    wire = make_wire("openai", http)
    provider = make_provider("openai", wire)
    wire.add(Reply(tool_calls=[("c1", "lookup", {})]))
    original = wire.render

    def broken(reply: Reply) -> dict:
        body = original(reply)
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{oops"
        return body

    wire.render = broken  # type: ignore[method-assign]
    response = await provider.complete(request(tools=(TOOL,)))
    assert response.tool_calls[0].arguments == {"__invalid_json__": "{oops"}
    await provider.aclose()


def _task(tools: tuple[ToolSpec, ...], model: str = "llama-test") -> Task:
    config = ProviderConfig(type="ollama", model=model)
    return Task(
        name="fetch",
        path="fetch",
        folder=Path("."),
        config=TaskConfig(),
        settings=EffectiveSettings(),
        tools=tools,
        provider=ResolvedProvider("ollama", "ollama", config),
    )


SEARCH = ToolSpec("search", "python", "Search.", {"type": "object"}, source_file="tools.md")
REFERENCE = ToolSpec("browser", "reference", "Browse.", {"type": "object"}, source_file="t.md")


async def test_ollama_model_without_tools_fails_before_the_run(http) -> None:
    wire = make_wire("ollama", http, capabilities=["completion"])
    provider = make_provider("ollama", wire)
    with pytest.raises(ConfigError) as caught:
        await provider.check_capabilities(_task((SEARCH,)))
    assert caught.value.code == "FP323"
    assert "'fetch'" in str(caught.value) and "llama-test" in str(caught.value)
    assert provider.supports_tools is False
    assert wire.requests == [], "no chat call was made"
    await provider.aclose()


async def test_ollama_refuses_tools_at_the_first_call_too(http) -> None:
    wire = make_wire("ollama", http, capabilities=["completion"])
    provider = make_provider("ollama", wire)
    with pytest.raises(ConfigError) as caught:
        await provider.complete(request(tools=(TOOL,), task_path="fetch"))
    assert caught.value.code == "FP323" and "'fetch'" in str(caught.value)
    assert wire.requests == []
    wire.add(Reply(text="no tools needed"))
    assert (await provider.complete(request())).text == "no tools needed"
    await provider.aclose()


async def test_ollama_capability_check_passes(http) -> None:
    wire = make_wire("ollama", http)
    provider = make_provider("ollama", wire)
    await provider.check_capabilities(_task((SEARCH,)))
    await provider.check_capabilities(_task((REFERENCE,), model="missing"))  # nothing callable
    assert provider.supports_tools is True
    await provider.aclose()


async def test_ollama_unknown_model_is_reported(http) -> None:
    wire = make_wire("ollama", http)
    provider = make_provider("ollama", wire)
    with pytest.raises(ProviderError) as caught:
        await provider.check_capabilities(_task((SEARCH,), model="missing"))
    assert caught.value.kind == "bad_request" and "not found" in str(caught.value)
    await provider.aclose()


async def test_ollama_tool_call_ids_are_deterministic(http) -> None:
    wire = make_wire("ollama", http)
    provider = make_provider("ollama", wire)
    wire.add(Reply(tool_calls=[("", "lookup", {})]), Reply(tool_calls=[("", "lookup", {})]))
    first = await provider.complete(request(tools=(TOOL,)))
    second = await provider.complete(request(tools=(TOOL,)))
    assert first.tool_calls[0].id == second.tool_calls[0].id == "call_1_0"
    await provider.aclose()


async def test_ollama_error_detail(http) -> None:
    wire = make_wire("ollama", http)
    provider = make_provider("ollama", wire)
    wire.add(Failure(500, "out of memory"))
    with pytest.raises(ProviderError) as caught:
        await provider.complete(request())
    assert "out of memory" in str(caught.value)
    await provider.aclose()


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds(None) is None


def test_one_client_per_event_loop(http) -> None:
    """Prefect may run tasks in worker threads with loops of their own."""
    import asyncio

    wire = make_wire("openai", http)
    provider = make_provider("openai", wire)
    wire.add(Reply(text="a"), Reply(text="b"))

    async def ask() -> tuple[str, int]:
        answer = await provider.complete(request())
        return answer.text, id(provider._clients.get())

    first = asyncio.run(ask())
    second = asyncio.run(ask())
    assert (first[0], second[0]) == ("a", "b")
    assert len(provider._clients._clients) == 1, "the closed loop's client was dropped"
