"""Message content for spans: only with the opt-in variable, and always masked.

``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (the variable the OpenTelemetry
GenAI instrumentations read) records instructions, messages, answers and tool arguments and
results, in the JSON shapes of the GenAI conventions; each goes through the redaction registry
first, like every other sink. Without the variable no content is recorded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..redaction import SECRETS

CAPTURE_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_CHARS = 32_000
"""An attribute's content is cut at this length (backends refuse very large attributes)."""


def capture_enabled() -> bool:
    """Whether message content may be recorded (the opt-in variable is ``true``)."""
    return os.environ.get(CAPTURE_VAR, "").strip().lower() == "true"


def masked_json(value: Any) -> str:
    """``value`` as JSON, every string masked, cut at :data:`MAX_CHARS`."""
    text = json.dumps(SECRETS.data(value), ensure_ascii=False, default=str)
    text = SECRETS.text(text)  # a secret split across keys and values, or non-string leaves
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "…"


def instructions(system: str) -> str:
    """``gen_ai.system_instructions``: the system prompt as one text part."""
    return masked_json([{"type": "text", "content": system}])


def input_messages(messages: Iterable[Any]) -> str:
    """``gen_ai.input.messages``: the conversation sent, role and parts per message."""
    return masked_json([_message(message) for message in messages])


def output_messages(text: str, tool_calls: Iterable[Any], finish_reason: str | None) -> str:
    """``gen_ai.output.messages``: the model's answer."""
    parts = _parts(text, tool_calls)
    return masked_json([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])


def _message(message: Any) -> dict[str, Any]:
    results = getattr(message, "results", None)
    if results is not None:  # tool results, sent back as the "tool" role
        parts = [
            {"type": "tool_call_response", "id": r.call_id, "response": r.content} for r in results
        ]
        return {"role": "tool", "parts": parts}
    if hasattr(message, "tool_calls"):
        return {"role": "assistant", "parts": _parts(message.text, message.tool_calls)}
    return {"role": "user", "parts": [{"type": "text", "content": getattr(message, "content", "")}]}


def _parts(text: str, tool_calls: Iterable[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call in tool_calls:
        arguments = call.arguments if isinstance(call.arguments, Mapping) else str(call.arguments)
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}
        )
    return parts
