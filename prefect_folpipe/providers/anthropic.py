"""Anthropic (Claude) adapter: the Messages API through the official ``anthropic`` SDK.

Translation only: ``ModelRequest`` -> ``messages.create`` keyword arguments, and the answer
back into ``ModelResponse``. The stable prefix (system prompt and tool definitions) carries a
``cache_control`` breakpoint unless ``prompt_caching: false``, so every turn of a conversation
and every repeat of a task reads it from Anthropic's prompt cache. The SDK's own retries are
off: Prefect retries failed tasks.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any, ClassVar

from .._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from ..workflow.config import ProviderConfig
from ..workflow.tree import Task
from ._sdk import (
    DEFAULT_MAX_TOKENS,
    SdkProvider,
    missing_sdk,
    model_name,
    option,
    refusal_error,
    task_where,
    truncated_error,
)

CACHE_BREAKPOINT = {"type": "ephemeral"}
EMPTY_TEXT = "(no text)"


class AnthropicProvider(SdkProvider):
    """Claude models via ``anthropic.AsyncAnthropic``."""

    name: ClassVar[str] = "anthropic"

    def _new_client(self) -> Any:
        sdk = _sdk()
        api_key = self._resolve_api_key("ANTHROPIC_API_KEY")
        return sdk.AsyncAnthropic(api_key=api_key, **self._client_options())

    async def check_capabilities(self, task: Task) -> None:
        """Claude models call tools natively: nothing to check."""
        return None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        client = self._clients.get()
        kwargs = build_request(request, self.config)
        message = await self._create(_sdk(), client.messages.create, _error_detail, **kwargs)
        return parse_response(message, request, provider=self.name)


def build_request(request: ModelRequest, config: ProviderConfig) -> dict[str, Any]:
    """Keyword arguments of ``messages.create`` for one request."""
    caching = config.prompt_caching is not False
    kwargs: dict[str, Any] = {
        "model": model_name(config, request.model, "anthropic"),
        "max_tokens": option(config, request.max_tokens, "max_tokens") or DEFAULT_MAX_TOKENS,
        "messages": to_messages(request.messages),
    }
    if request.system:
        block: dict[str, Any] = {"type": "text", "text": request.system}
        if caching:
            block["cache_control"] = CACHE_BREAKPOINT
        kwargs["system"] = [block]
    if request.tools:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in request.tools
        ]
        if caching:
            tools[-1]["cache_control"] = CACHE_BREAKPOINT
        kwargs["tools"] = tools
    extra: dict[str, Any] = {}
    temperature = option(config, request.temperature, "temperature")
    if temperature is not None:
        extra["temperature"] = temperature
    if extra:
        kwargs["extra_body"] = extra
    if request.output_schema is not None and config.json_mode is True:
        kwargs["output_config"] = {
            "format": {"type": "json_schema", "schema": dict(request.output_schema)}
        }
    return kwargs


def to_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Neutral messages as Anthropic turns; consecutive same-role turns are merged."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, UserMessage):
        return "user", [{"type": "text", "text": message.content or EMPTY_TEXT}]
    if isinstance(message, ToolResultsMessage):
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": r.call_id,
                "content": r.content or EMPTY_TEXT,
                "is_error": r.is_error,
            }
            for r in message.results
        ]
    assert isinstance(message, AssistantMessage)
    blocks: list[dict[str, Any]] = []
    if message.text or not message.tool_calls:
        blocks.append({"type": "text", "text": message.text or EMPTY_TEXT})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
        for c in message.tool_calls
    )
    return "assistant", blocks


def parse_response(message: Any, request: ModelRequest, *, provider: str) -> ModelResponse:
    """``ModelResponse`` from an SDK ``Message``; refusals and truncated tool calls raise."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(block.id, block.name, dict(block.input or {})))
    stop = message.stop_reason
    _check_stop(stop, request, calls, provider)
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=usage_of(message.usage),
        stop_reason=_STOP_REASONS.get(stop or "", stop),
        model=message.model,
    )


_STOP_REASONS: dict[str, str] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


def _check_stop(
    stop: str | None, request: ModelRequest, calls: list[ToolCall], provider: str
) -> None:
    if stop == "refusal":
        raise refusal_error(provider, task_where(request))
    if stop == "max_tokens" and calls:
        raise truncated_error(provider, task_where(request))


def usage_of(usage: Any) -> Usage:
    """Usage with cache reads/writes; ``input_tokens`` counts every prompt token."""
    if usage is None:
        return Usage()
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    write = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(
        input_tokens=(usage.input_tokens or 0) + read + write,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _error_detail(exc: Any) -> str:
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return f"{error.get('type', 'error')}: {error['message']}"
        return json.dumps(body)[:500]
    return str(getattr(exc, "message", "") or type(exc).__name__)


def _sdk() -> ModuleType:
    """The ``anthropic`` SDK (imported on first use), or FP321 with the install line."""
    try:
        import anthropic
    except ImportError:
        raise missing_sdk("anthropic") from None
    return anthropic
