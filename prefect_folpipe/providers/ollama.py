"""Ollama adapter: local models through the native ``ollama`` client (``/api/chat``).

Why the native API and not Ollama's OpenAI-compatible ``/v1``: the native API says what a
model can do (``/api/show`` lists ``capabilities``), so a task with tools fails *before the run*
when its model cannot call tools, instead of the model ignoring them; it takes a JSON schema
as ``format`` for typed outputs; and it reports token counts for every call. To use ``/v1``
anyway, declare ``type: openai`` with ``base_url: http://localhost:11434/v1``.

Ollama's model options (``num_ctx``, ``num_predict``, ``top_k``, ``repeat_penalty``, ...: see
``workflow.providers.OLLAMA_OPTIONS``) written in the block or a task's ``agent:`` go to the
request's ``options`` as given; an explicit ``num_predict`` wins over ``max_tokens``.
"""

from __future__ import annotations

import contextvars
import json
from types import ModuleType
from typing import Any, ClassVar

import httpx

from .._messages import AssistantMessage, ModelRequest, ModelResponse, ToolCall, ToolResult, Usage
from ..errors import ConfigError
from ..workflow.config import ProviderConfig
from ..workflow.providers import OLLAMA_OPTIONS
from ..workflow.tree import Task
from ._sdk import (
    INVALID_ARGUMENTS_KEY,
    SdkProvider,
    chat_messages,
    connection_error,
    function_tools,
    missing_sdk,
    model_name,
    option,
    provider_error,
    status_error,
)

DEFAULT_HOST = "http://localhost:11434"

_error_headers: contextvars.ContextVar[httpx.Headers | None] = contextvars.ContextVar(
    "ollama_error_headers", default=None
)


async def _keep_error_headers(response: httpx.Response) -> None:
    """httpx response hook: the ollama client drops headers (``Retry-After``) on errors."""
    if response.status_code >= 400:
        _error_headers.set(response.headers)


class OllamaProvider(SdkProvider):
    """Local (or remote) Ollama models via ``ollama.AsyncClient``."""

    name: ClassVar[str] = "ollama"
    supports_tools: bool = True
    """Becomes ``False`` once ``check_capabilities`` learns the model cannot call tools."""

    def __init__(self, config: ProviderConfig, **options: Any) -> None:
        super().__init__(config, **options)
        self._tool_support: dict[str, bool] = {}

    def _new_client(self) -> Any:
        sdk = _sdk()
        # a key is optional (Ollama's hosted API, or a proxy in front of a local server)
        api_key = self._resolve_api_key(None, required=False)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        return sdk.AsyncClient(
            host=self.config.base_url or DEFAULT_HOST,
            timeout=self.config.timeout,
            headers=headers,
            follow_redirects=False,
            event_hooks={"response": [_keep_error_headers]},
        )

    async def check_capabilities(self, task: Task) -> None:
        """Fail before the run when ``task`` has tools and its model cannot call them."""
        if not any(tool.executable for tool in task.tools):
            return
        model = model_name(self.config, _task_model(task), self.name)
        await self._require_tools(model, task.path)

    async def _require_tools(self, model: str, task_path: str) -> None:
        if await self._model_calls_tools(model):
            return
        self.supports_tools = False
        raise ConfigError(
            f"task {task_path or '<root>'!r} has tools, but the Ollama model {model!r} "
            "cannot call tools",
            code="FP323",
            hint="pick a model with tool support (ollama show <model> lists 'tools' under "
            "Capabilities), or remove the task's tools",
        )

    async def _model_calls_tools(self, model: str) -> bool:
        if model not in self._tool_support:
            info = await self._call(self._clients.get().show, model)
            capabilities = info.capabilities
            if capabilities is not None:
                self._tool_support[model] = "tools" in capabilities
            else:  # servers before capabilities existed: tool models template `.Tools`
                self._tool_support[model] = ".Tools" in (info.template or "")
        return self._tool_support[model]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        kwargs = build_request(request, self.config)
        if request.tools:  # also guarded here, in case nothing ran check_capabilities
            await self._require_tools(kwargs["model"], request.task_path)
        answer = await self._call(self._clients.get().chat, **kwargs)
        return parse_response(answer, request)

    async def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        sdk = _sdk()
        _error_headers.set(None)
        try:
            return await method(*args, **kwargs)
        except sdk.ResponseError as exc:
            raise status_error(
                exc.status_code,
                exc.error,
                provider=self.name,
                headers=_error_headers.get(),
                secret=self._api_key,
            ) from None
        except httpx.TimeoutException as exc:
            raise connection_error(exc, provider=self.name, timed_out=True) from None
        except (ConnectionError, httpx.TransportError) as exc:
            raise connection_error(exc, provider=self.name, timed_out=False) from None


def _task_model(task: Task) -> str | None:
    return task.provider.model if task.provider else None


def build_request(request: ModelRequest, config: ProviderConfig) -> dict[str, Any]:
    """Keyword arguments of ``AsyncClient.chat`` for one request."""
    kwargs: dict[str, Any] = {
        "model": model_name(config, request.model, "ollama"),
        "messages": chat_messages(request.system, request.messages, _assistant, _answers),
        "stream": False,
    }
    if request.tools:
        kwargs["tools"] = function_tools(request.tools)
    options: dict[str, Any] = {}
    temperature = option(config, request.temperature, "temperature")
    if temperature is not None:
        options["temperature"] = temperature
    max_tokens = option(config, request.max_tokens, "max_tokens")
    if max_tokens is not None:
        options["num_predict"] = max_tokens
    extra = config.model_extra or {}
    options.update((key, extra[key]) for key in OLLAMA_OPTIONS if extra.get(key) is not None)
    if options:
        kwargs["options"] = options
    if request.output_schema is not None and config.json_mode is not False:
        kwargs["format"] = dict(request.output_schema)
    return kwargs


def _answers(result: ToolResult) -> dict[str, str]:
    return {"tool_name": result.name}


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": "assistant", "content": message.text}
    if message.tool_calls:
        entry["tool_calls"] = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}}
            for c in message.tool_calls
        ]
    return entry


def parse_response(answer: Any, request: ModelRequest) -> ModelResponse:
    """``ModelResponse`` from a ``ChatResponse``.

    Ollama's tool calls carry no ids; each gets one derived from its position in the
    conversation, so a replayed conversation produces the same ids.
    """
    message = answer.message
    turn = len(request.messages)
    calls = tuple(
        ToolCall(
            getattr(call, "id", None) or f"call_{turn}_{index}",
            call.function.name,
            _arguments(call.function.arguments),
        )
        for index, call in enumerate(message.tool_calls or ())
    )
    reason = answer.done_reason
    if reason == "length" and calls:
        raise provider_error(
            "ollama: the answer was cut off at max_tokens in the middle of a tool call; "
            "raise `max_tokens`",
            kind="bad_request",
            provider="ollama",
            code="FP325",
        )
    stop = "tool_use" if calls else {"stop": "end_turn", "length": "max_tokens"}.get(reason or "")
    return ModelResponse(
        text=message.content or "",
        tool_calls=calls,
        usage=Usage(
            input_tokens=answer.prompt_eval_count or 0, output_tokens=answer.eval_count or 0
        ),
        stop_reason=stop or reason,
        model=answer.model,
    )


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return {INVALID_ARGUMENTS_KEY: raw}
    return dict(raw or {})


def _sdk() -> ModuleType:
    """The ``ollama`` SDK (imported on first use), or FP321 with the install line."""
    try:
        import ollama
    except ImportError:
        raise missing_sdk("ollama") from None
    return ollama
