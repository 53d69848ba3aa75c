"""Helpers shared by the SDK-backed adapters: API keys, error mapping, install hints.

Nothing here imports an SDK at module load; ``SdkProvider`` holds what every adapter does
alike (config, API key, one client per event loop), so each adapter keeps only its SDK mapping.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Self

from .._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from ..errors import ConfigError, ProviderError, ProviderErrorKind
from ..redaction import register_secret
from ..workflow.config import ProviderConfig

SecretResolver = Callable[[str], str]

DEFAULT_MAX_TOKENS = 4096
INVALID_ARGUMENTS_KEY = "__invalid_json__"
"""Tool-call arguments that are not a JSON object arrive as ``{INVALID_ARGUMENTS_KEY: raw}``;
the tool runtime's schema check reports that back to the model."""


def missing_sdk(module: str) -> ConfigError:
    """FP321 for an optional SDK that is not installed, with the ``pip install`` line."""
    return ConfigError(
        f"the {module!r} package is not installed",
        code="FP321",
        hint=f"pip install 'prefect-folpipe[{module}]'",
    )


def resolve_api_key(
    config: ProviderConfig,
    *,
    provider: str,
    default_env: str | None,
    secret_resolver: SecretResolver | None,
    required: bool = True,
) -> str | None:
    """The API key from ``api_key_secret`` (a Prefect Secret block) or ``api_key_env``.

    The key never appears in a message: errors only name the variable or the block. It is
    registered with the redaction registry, so no sink (logs, artifacts, the cassette, the
    context) can store it.
    """
    if config.api_key_secret:
        key = _key_from_secret(config.api_key_secret, provider, secret_resolver)
        register_secret(key)  # every sink masks it from now on, even mid-run
        return key
    env_name = config.api_key_env or default_env
    value = os.environ.get(env_name, "").strip() if env_name else ""
    if value or not required:
        register_secret(value)  # `api_key_env` may name a variable no pattern matches
        return value or None
    raise ConfigError(
        f"provider {provider!r} has no API key: environment variable {env_name} is not set",
        code="FP322",
        hint=f"export {env_name}=..., or set `api_key_secret: <block>` to read a Prefect Secret",
    )


def _key_from_secret(block: str, provider: str, resolver: SecretResolver | None) -> str:
    if resolver is None:
        raise ConfigError(
            f"provider {provider!r} reads its API key from the Prefect Secret block {block!r}, "
            "but no secret resolver is available here",
            code="FP322",
            hint="run the workflow through folpipe / folder_to_flow, or use `api_key_env`",
        )
    try:
        value = resolver(block)
    except Exception as exc:
        raise ConfigError(
            f"provider {provider!r}: the Prefect Secret block {block!r} could not be read "
            f"({type(exc).__name__})",
            code="FP322",
            hint=f"create it: prefect block create secret (name {block!r})",
        ) from None
    if not value:
        raise ConfigError(
            f"provider {provider!r}: the Prefect Secret block {block!r} is empty",
            code="FP322",
            hint="store the API key in the block",
        )
    return value


def model_name(config: ProviderConfig, requested: str | None, provider: str) -> str:
    """The model to call: the request's (task ``agent.model``), else the block's."""
    model = requested or config.model
    if not model:
        raise ConfigError(
            f"provider {provider!r} has no model configured",
            code="FP326",
            hint="set `model:` in the provider block of the root task.yaml or in `agent:`",
        )
    return model


def kind_for_status(status: int) -> ProviderErrorKind:
    """Map an HTTP status to an error kind (429/5xx/408 retryable; other 4xx not)."""
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server_error"
    return "bad_request"


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date) as seconds, if given."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def provider_error(
    message: str,
    *,
    kind: ProviderErrorKind,
    provider: str,
    retry_after: float | None = None,
    code: str | None = None,
    secret: str | None = None,
) -> ProviderError:
    """A ProviderError whose message never contains ``secret``."""
    if secret:
        message = message.replace(secret, "[REDACTED]")
    return ProviderError(message, kind=kind, provider=provider, retry_after=retry_after, code=code)


def status_error(
    status: int,
    detail: str,
    *,
    provider: str,
    headers: Mapping[str, str] | None = None,
    secret: str | None = None,
) -> ProviderError:
    """The ProviderError for an HTTP error answer of the model API."""
    kind = kind_for_status(status)
    wait = retry_after_seconds(headers) if kind in ("rate_limit", "server_error") else None
    return provider_error(
        f"{provider} API returned HTTP {status} ({kind}): {_short(detail)}",
        kind=kind,
        provider=provider,
        retry_after=wait,
        secret=secret,
    )


def connection_error(exc: BaseException, *, provider: str, timed_out: bool) -> ProviderError:
    """A timeout or a connection failure (both retryable, kind ``timeout``)."""
    what = "timed out" if timed_out else "could not connect"
    return provider_error(
        f"{provider} API call {what} ({type(exc).__name__})", kind="timeout", provider=provider
    )


def task_where(request: ModelRequest) -> str:
    """The task a request belongs to, for error messages."""
    return f"task {request.task_path or request.task_name or '<root>'!r}"


def refusal_error(provider: str, where: str) -> ProviderError:
    """The model refused to answer (FP324, not retryable)."""
    return provider_error(
        f"{provider}: the model refused to answer ({where})",
        kind="bad_request",
        provider=provider,
        code="FP324",
    )


def truncated_error(provider: str, where: str) -> ProviderError:
    """A tool call cut off at ``max_tokens`` (FP325, not retryable)."""
    return provider_error(
        f"{provider}: the answer was cut off at max_tokens in the middle of a tool call "
        f"({where}); raise `max_tokens` in the provider block or the task's `agent:`",
        kind="bad_request",
        provider=provider,
        code="FP325",
    )


def function_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """Tool definitions in the ``{"type": "function", ...}`` shape (OpenAI, Ollama)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def chat_messages(
    system: str,
    messages: tuple[Message, ...],
    assistant: Callable[[AssistantMessage], dict[str, Any]],
    answers: Callable[[ToolResult], dict[str, str]],
) -> list[dict[str, Any]]:
    """The system prompt and the neutral messages as chat messages (OpenAI, Ollama).

    ``assistant`` writes an assistant turn; ``answers`` names the call a tool result answers.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, ToolResultsMessage):
            out.extend(
                {
                    "role": "tool",
                    **answers(r),
                    "content": f"ERROR: {r.content}" if r.is_error else r.content,
                }
                for r in message.results
            )
        else:
            out.append(assistant(message))
    return out


def _short(text: str, limit: int = 500) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LoopClients:
    """One SDK client per event loop: httpx async clients must not cross loops."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, Any]] = {}

    def get(self) -> Any:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:
            for key, (owner, _) in list(self._clients.items()):
                if owner.is_closed():  # a finished worker thread's loop: forget its client
                    self._clients.pop(key, None)
            entry = (loop, self._factory())
            self._clients[id(loop)] = entry
        return entry[1]

    async def aclose(self) -> None:
        """Close the clients of the running loop; drop the others (their loops are gone)."""
        loop = asyncio.get_running_loop()
        clients, self._clients = self._clients, {}
        for owner, client in clients.values():
            if owner is loop:
                await client.close()


def option(config: ProviderConfig, request_value: Any, key: str) -> Any:
    """A request setting, falling back to the provider block's."""
    return request_value if request_value is not None else getattr(config, key, None)


class SdkProvider:
    """What the SDK-backed adapters share: the provider block, the API key, the clients.

    A subclass sets ``name`` and implements ``_new_client`` (which calls ``_resolve_api_key``)
    and ``complete``.
    """

    name: ClassVar[str]
    supports_tools: bool = True

    def __init__(
        self,
        config: ProviderConfig,
        *,
        secret_resolver: SecretResolver | None = None,
        workflow_root: Path | None = None,
    ) -> None:
        self.config = config
        self._secret_resolver = secret_resolver
        self._api_key: str | None = None
        self._clients = LoopClients(self._new_client)

    @classmethod
    def from_config(cls, config: ProviderConfig, env: Any) -> Self:
        """Registry hook: build from a provider block and a ``ProviderEnv``."""
        return cls(config, secret_resolver=env.secret_resolver, workflow_root=env.workflow_root)

    @property
    def secret_values(self) -> tuple[str, ...]:
        """Values a cassette or a log must never contain (the API key in use)."""
        return (self._api_key,) if self._api_key else ()

    def _new_client(self) -> Any:
        raise NotImplementedError

    def _resolve_api_key(self, default_env: str | None, *, required: bool = True) -> str | None:
        """Resolve (and remember, for ``secret_values``) the API key of the block."""
        self._api_key = resolve_api_key(
            self.config,
            provider=self.name,
            default_env=default_env,
            secret_resolver=self._secret_resolver,
            required=required,
        )
        return self._api_key

    def _client_options(self) -> dict[str, Any]:
        """``base_url`` / ``timeout`` of the block, SDK retries off (Prefect retries)."""
        kwargs: dict[str, Any] = {"max_retries": 0}
        if self.config.base_url:
            kwargs["base_url"] = self.config.base_url
        if self.config.timeout is not None:
            kwargs["timeout"] = self.config.timeout
        return kwargs

    async def _create(
        self,
        sdk: ModuleType,
        method: Callable[..., Any],
        detail: Callable[[Any], str],
        **kwargs: Any,
    ) -> Any:
        """Call an ``anthropic`` / ``openai`` SDK method, mapping their shared error classes."""
        try:
            return await method(**kwargs)
        except sdk.APIStatusError as exc:
            raise status_error(
                exc.status_code,
                detail(exc),
                provider=self.name,
                headers=exc.response.headers,
                secret=self._api_key,
            ) from None
        except sdk.APITimeoutError as exc:
            raise connection_error(exc, provider=self.name, timed_out=True) from None
        except sdk.APIConnectionError as exc:
            raise connection_error(exc, provider=self.name, timed_out=False) from None

    async def aclose(self) -> None:
        await self._clients.aclose()
