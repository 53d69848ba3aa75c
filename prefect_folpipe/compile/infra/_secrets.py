"""Read provider API keys from Prefect ``Secret`` blocks (``api_key_secret: <block name>``).

Providers never import Prefect; the run hands them this resolver. The value is returned to the
provider only: it is not logged, not stored in results or artifacts, not a flow parameter.
"""

from __future__ import annotations


def prefect_secret_resolver(name: str) -> str:
    """The string stored in the Prefect Secret block ``name`` (raises if missing / not text)."""
    from prefect.blocks.system import Secret

    value = Secret.load(name, _sync=True).get()  # type: ignore[call-arg]
    if not isinstance(value, str):
        raise TypeError(f"Secret block {name!r} holds a {type(value).__name__}, not a string")
    return value
