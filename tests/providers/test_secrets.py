"""API keys from Prefect Secret blocks, through the real Prefect API."""

from __future__ import annotations

import uuid

import pytest

from prefect_folpipe.compile.infra._secrets import prefect_secret_resolver
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.providers import ModelRequest, UserMessage

from .conftest import make_provider, make_wire
from .wire import Reply

pytestmark = pytest.mark.prefect


def _save_secret(value: str) -> str:
    from prefect.blocks.system import Secret

    name = f"llm-key-{uuid.uuid4().hex[:8]}"
    Secret(value=value).save(name, _sync=True)  # type: ignore[call-arg]
    return name


def test_resolver_reads_the_block(prefect_harness: str) -> None:
    name = _save_secret("sk-from-prefect-999")
    assert prefect_secret_resolver(name) == "sk-from-prefect-999"


async def test_provider_uses_the_block_from_async_code(prefect_harness: str, http) -> None:
    name = _save_secret("sk-from-prefect-777")
    wire = make_wire("anthropic", http)
    wire.add(Reply(text="ok"))
    provider = make_provider(
        "anthropic",
        wire,
        api_key_env=None,
        api_key_secret=name,
        secret_resolver=prefect_secret_resolver,
    )
    answer = await provider.complete(ModelRequest(system="s", messages=(UserMessage("x"),)))
    assert answer.text == "ok"
    headers = wire.headers[-1]
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == "sk-from-prefect-777"
    await provider.aclose()


async def test_missing_block_names_it(prefect_harness: str, http) -> None:
    wire = make_wire("openai", http)
    provider = make_provider(
        "openai",
        wire,
        api_key_env=None,
        api_key_secret="no-such-block",
        secret_resolver=prefect_secret_resolver,
    )
    with pytest.raises(ConfigError) as caught:
        await provider.complete(ModelRequest(system="s", messages=(UserMessage("x"),)))
    assert "'no-such-block'" in str(caught.value) and caught.value.code == "FP322"
