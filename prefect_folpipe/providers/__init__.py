"""Model providers: the provider protocol and the registry/pool (message types re-exported from
``messages`` for provider authors).

Adapters (``scripted``, ``anthropic``, ``openai``, ``ollama``, ``replay``) are imported lazily
by ``registry`` when a workflow uses them.
"""

from __future__ import annotations

from .._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    message_to_dict,
)
from .base import Provider
from .classes import ProviderEnv, resolve_provider_class
from .registry import ProviderOverride, ProviderPool, override_from_env

__all__ = [
    "AssistantMessage",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderEnv",
    "ProviderOverride",
    "ProviderPool",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "ToolResultsMessage",
    "Usage",
    "UserMessage",
    "message_to_dict",
    "override_from_env",
    "resolve_provider_class",
]
