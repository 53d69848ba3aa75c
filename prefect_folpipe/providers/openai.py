"""OpenAI adapter: chat completions with function calling through the official ``openai`` SDK.

``base_url`` points it at any OpenAI-compatible server (vLLM, LM Studio, Ollama's ``/v1``);
such servers often need no key, so a key is only required for the official endpoint. When the
task declares typed outputs the request asks for JSON through ``response_format`` (a JSON
schema) unless ``json_mode: false``. The SDK's own retries are off: Prefect retries.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any, ClassVar

from .._messages import AssistantMessage, ModelRequest, ModelResponse, ToolCall, ToolResult, Usage
from ..workflow.config import ProviderConfig
from ..workflow.tree import Task
from ._sdk import (
    INVALID_ARGUMENTS_KEY,
    SdkProvider,
    chat_messages,
    function_tools,
    missing_sdk,
    model_name,
    option,
    provider_error,
    refusal_error,
    task_where,
    truncated_error,
)

NO_KEY_PLACEHOLDER = "not-needed"
"""Sent to OpenAI-compatible servers that take no key (the SDK insists on one)."""


class OpenAIProvider(SdkProvider):
    """GPT models, or any OpenAI-compatible server via ``base_url``."""

    name: ClassVar[str] = "openai"

    def _new_client(self) -> Any:
        sdk = _sdk()
        api_key = self._resolve_api_key("OPENAI_API_KEY", required=self.config.base_url is None)
        return sdk.AsyncOpenAI(api_key=api_key or NO_KEY_PLACEHOLDER, **self._client_options())

    async def check_capabilities(self, task: Task) -> None:
        """Function calling is assumed for OpenAI and compatible servers."""
        return None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        client = self._clients.get()
        kwargs = build_request(request, self.config)
        create = client.chat.completions.create
        completion = await self._create(_sdk(), create, _error_detail, **kwargs)
        return parse_response(completion, request, provider=self.name)


def build_request(request: ModelRequest, config: ProviderConfig) -> dict[str, Any]:
    """Keyword arguments of ``chat.completions.create`` for one request."""
    kwargs: dict[str, Any] = {
        "model": model_name(config, request.model, "openai"),
        "messages": chat_messages(request.system, request.messages, _assistant, _answers),
    }
    if request.tools:
        kwargs["tools"] = function_tools(request.tools)
    temperature = option(config, request.temperature, "temperature")
    if temperature is not None:
        kwargs["temperature"] = temperature
    max_tokens = option(config, request.max_tokens, "max_tokens")
    if max_tokens is not None:
        # the official API wants max_completion_tokens; compatible servers know max_tokens
        key = "max_tokens" if config.base_url else "max_completion_tokens"
        kwargs[key] = max_tokens
    if request.output_schema is not None and config.json_mode is not False:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "task_output", "schema": dict(request.output_schema)},
        }
    return kwargs


def _answers(result: ToolResult) -> dict[str, str]:
    return {"tool_call_id": result.call_id}


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
            }
            for c in message.tool_calls
        ]
    elif entry["content"] is None:
        entry["content"] = ""
    return entry


_FINISH_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def parse_response(completion: Any, request: ModelRequest, *, provider: str) -> ModelResponse:
    """``ModelResponse`` from a ``ChatCompletion``; refusals and truncated tool calls raise."""
    if not completion.choices:
        raise provider_error(
            f"{provider}: the answer has no choices", kind="server_error", provider=provider
        )
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(_tool_call(c) for c in message.tool_calls or ())
    finish = choice.finish_reason
    if getattr(message, "refusal", None) or finish == "content_filter":
        raise refusal_error(provider, task_where(request))
    if finish == "length" and calls:
        raise truncated_error(provider, task_where(request))
    return ModelResponse(
        text=message.content or "",
        tool_calls=calls,
        usage=usage_of(completion.usage),
        stop_reason=_FINISH_REASONS.get(finish or "", finish),
        model=completion.model,
    )


def _tool_call(call: Any) -> ToolCall:
    raw = call.function.arguments or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        # reaches the tool runtime, whose schema check reports it back to the model
        arguments = {INVALID_ARGUMENTS_KEY: raw}
    return ToolCall(call.id, call.function.name, arguments)


def usage_of(usage: Any) -> Usage:
    """Usage; ``prompt_tokens`` already includes the cached part (``cache_read_tokens``)."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details else 0
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )


def _error_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        return json.dumps(body)[:500]
    return str(getattr(exc, "message", "") or type(exc).__name__)


def _sdk() -> ModuleType:
    """The ``openai`` SDK (imported on first use), or FP321 with the install line."""
    try:
        import openai
    except ImportError:
        raise missing_sdk("openai") from None
    return openai
