"""Values of tool metadata read both by the tool runners and by ``folpipe validate``.

Kept free of heavy imports (httpx, jsonschema) so that validation stays quick.
"""

from __future__ import annotations

import re
from typing import Any

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}``: an environment variable read by an http or mcp tool."""


def allow_list(value: Any) -> frozenset[str]:
    """The names of ``> env:`` (a list, or comma-separated)."""
    return frozenset(meta_names(value))


def meta_names(value: Any) -> list[str]:
    """A metadata list of names: a YAML list, or one comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return [str(item) for item in value]
