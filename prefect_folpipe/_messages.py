"""Neutral model message types: what the agent, the tools and every provider adapter share.

Adapters only translate: our ``ModelRequest`` into the SDK's request, and the SDK's answer
back into ``ModelResponse``. Below ``tools/`` and ``providers/``; imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Usage:
    """Token counts of one or more model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for; ``id`` must be answered by a ToolResult."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call (``is_error`` for failures reported to the model)."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantMessage:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolResultsMessage:
    """Results of every tool call of the previous assistant turn, in call order."""

    results: tuple[ToolResult, ...]
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolResultsMessage


@dataclass(frozen=True)
class ToolDefinition:
    """What the model is told about a callable tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """One model call: everything an adapter needs, nothing Prefect-specific."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    output_schema: Mapping[str, Any] | None = None
    """JSON Schema of the declared typed outputs (for JSON mode), when declared."""
    task_path: str = ""
    task_name: str = ""
    iteration: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """Extra provider-specific settings from the provider block."""


@dataclass(frozen=True)
class ModelResponse:
    """One model answer: text and/or tool calls, with usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    model: str | None = None


def message_to_dict(message: Message) -> dict[str, Any]:
    """JSON-friendly form of a message (transcripts, artifacts, cassettes)."""
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, AssistantMessage):
        return {
            "role": "assistant",
            "text": message.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                for c in message.tool_calls
            ],
        }
    return {
        "role": "tool",
        "results": [
            {"call_id": r.call_id, "name": r.name, "content": r.content, "is_error": r.is_error}
            for r in message.results
        ],
    }
