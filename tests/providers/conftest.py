"""Fixtures for provider tests: one threaded local HTTP server per module, on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from prefect_folpipe.workflow.config import ProviderConfig

from .wire import AnthropicWire, OllamaWire, OpenAIWire, WireServer

API_KEY = "sk-test-0123456789abcdef"
KEY_ENV = "FOLPIPE_TEST_API_KEY"
PROVIDER_KINDS = ("anthropic", "openai", "ollama")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live: talks to a real model API (needs FOLPIPE_LIVE_*)")


@pytest.fixture(scope="module")
def local_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def http(local_server: HTTPServer) -> Iterator[HTTPServer]:
    local_server.clear()
    yield local_server
    local_server.clear()


@dataclass
class Harness:
    """A provider built from a block that points at the matching local wire server."""

    kind: str
    wire: WireServer
    provider: Any

    @property
    def last(self) -> dict[str, Any]:
        return self.wire.requests[-1]


def make_wire(kind: str, server: HTTPServer, **kwargs: Any) -> WireServer:
    classes = {"anthropic": AnthropicWire, "openai": OpenAIWire, "ollama": OllamaWire}
    return classes[kind](server, **kwargs)


def make_provider(kind: str, wire: WireServer, **settings: Any) -> Any:
    from prefect_folpipe.providers.classes import resolve_provider_class

    block: dict[str, Any] = {
        "type": kind,
        "model": f"{kind}-test-model",
        "base_url": wire.base_url,
        "api_key_env": KEY_ENV,
        "timeout": 5.0,
    }
    block.update(settings)
    resolver = settings.pop("secret_resolver", None)
    block.pop("secret_resolver", None)
    cls = resolve_provider_class(kind)
    return cls(ProviderConfig(**block), secret_resolver=resolver)


@pytest.fixture(params=PROVIDER_KINDS)
async def harness(
    request: pytest.FixtureRequest, http: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    wire = make_wire(request.param, http)
    provider = make_provider(request.param, wire)
    yield Harness(request.param, wire, provider)
    await provider.aclose()
