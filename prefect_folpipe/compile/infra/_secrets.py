"""Read provider API keys from Prefect ``Secret`` blocks (``api_key_secret: <block name>``).

Providers never import Prefect; the run hands them this resolver. The value is returned to the
provider only: it is not logged, not stored in results or artifacts, not a flow parameter.
"""

from __future__ import annotations

from ..storekey import secret_block_text


def prefect_secret_resolver(name: str) -> str:
    """The string stored in the Prefect Secret block ``name`` (raises if missing / not text)."""
    return secret_block_text(name)
