"""Live checks against the real APIs; skipped unless a FOLPIPE_LIVE_* variable is set.

The test suite clears ANTHROPIC_API_KEY / OPENAI_API_KEY, so live keys use their own names:
FOLPIPE_LIVE_ANTHROPIC_API_KEY, FOLPIPE_LIVE_OPENAI_API_KEY, FOLPIPE_LIVE_OLLAMA_URL (with
FOLPIPE_LIVE_OLLAMA_MODEL); optional FOLPIPE_LIVE_ANTHROPIC_MODEL / FOLPIPE_LIVE_OPENAI_MODEL.
"""

from __future__ import annotations

import os

import pytest

from prefect_folpipe.providers import (
    AssistantMessage,
    ModelRequest,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from prefect_folpipe.providers.classes import resolve_provider_class
from prefect_folpipe.workflow.config import ProviderConfig

pytestmark = pytest.mark.live

LIVE = {
    "anthropic": (
        "FOLPIPE_LIVE_ANTHROPIC_API_KEY",
        "FOLPIPE_LIVE_ANTHROPIC_MODEL",
        "claude-haiku-4-5",
    ),
    "openai": ("FOLPIPE_LIVE_OPENAI_API_KEY", "FOLPIPE_LIVE_OPENAI_MODEL", "gpt-4o-mini"),
    "ollama": ("FOLPIPE_LIVE_OLLAMA_URL", "FOLPIPE_LIVE_OLLAMA_MODEL", "llama3.1"),
}
CLOCK = ToolDefinition(
    "get_time", "The current time in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)  # fmt: skip


def live_provider(kind: str):  # type: ignore[no-untyped-def]
    secret_var, model_var, default_model = LIVE[kind]
    if not os.environ.get(secret_var):
        pytest.skip(f"set {secret_var} to run live {kind} tests")
    block: dict[str, object] = {"type": kind, "model": os.environ.get(model_var, default_model)}
    if kind == "ollama":
        block["base_url"] = os.environ[secret_var]
    else:
        block["api_key_env"] = secret_var
    return resolve_provider_class(kind)(ProviderConfig(**block))


@pytest.mark.parametrize("kind", sorted(LIVE))
async def test_live_tool_round_trip(kind: str) -> None:
    provider = live_provider(kind)
    try:
        ask = ModelRequest(
            system="Use the get_time tool to answer. Be brief.",
            messages=(UserMessage("What time is it in Paris?"),),
            tools=(CLOCK,),
            max_tokens=300,
        )
        first = await provider.complete(ask)
        assert first.tool_calls and first.tool_calls[0].name == "get_time"
        assert first.usage.input_tokens > 0
        results = tuple(ToolResult(c.id, c.name, "14:05") for c in first.tool_calls)
        second = await provider.complete(
            ModelRequest(
                system=ask.system,
                tools=ask.tools,
                max_tokens=300,
                messages=(
                    *ask.messages,
                    AssistantMessage(first.text, first.tool_calls),
                    ToolResultsMessage(results),
                ),
            )
        )
        assert "14" in second.text
    finally:
        await provider.aclose()
