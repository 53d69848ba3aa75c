"""The provider protocol every model adapter implements (message types: ``messages``)."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from .._messages import ModelRequest, ModelResponse


@runtime_checkable
class Provider(Protocol):
    """An async model adapter. Raise ``errors.ProviderError`` with the right ``kind``.

    Optional: ``answered_from_journal(request)``, told of a call a resumed pass answered from
    its journal instead of calling the provider (the scripted provider moves its cursor)."""

    name: ClassVar[str]
    supports_tools: bool

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the model's answer."""
        ...

    async def aclose(self) -> None:
        """Release clients and connections."""
        ...
