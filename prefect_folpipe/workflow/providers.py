"""Provider names of the folder format: built-in adapters, their aliases, legacy module paths.

The loader (which block a task uses) and the provider registry (which class answers it) both
read these, so a name means the same thing everywhere.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

BUILTIN_TYPES: tuple[str, ...] = ("anthropic", "openai", "ollama", "scripted", "replay")
ALIASES: dict[str, str] = {"claude": "anthropic"}
LEGACY_PREFIXES: tuple[str, ...] = ("agentflow.providers.", "prefect_folpipe.providers.")
"""``module: agentflow.providers.<name>`` (the spec's original runner) names a built-in."""
ENTRY_POINT_GROUP = "prefect_folpipe.providers"
NO_PROVIDER_MESSAGE = "No LLM provider configured. Add a `providers` block to your root task.yaml."


def canonical_type(name: str) -> str:
    """Built-in name for a type/alias/legacy module (``claude`` -> ``anthropic``); other
    names lowercased, otherwise unchanged."""
    lowered = name.strip().lower()
    for prefix in LEGACY_PREFIXES:
        if lowered.startswith(prefix):
            lowered = lowered[len(prefix) :]
    return ALIASES.get(lowered, lowered)


def builtin_name(name: str) -> str | None:
    """The built-in adapter a name or alias means (``None`` when it is not one)."""
    canonical = canonical_type(name)
    return canonical if canonical in BUILTIN_TYPES else None


def builtin_of_module(module: str) -> str | None:
    """The built-in named by ``module: agentflow.providers.<name>`` (or our own module path)."""
    if ":" in module or not module.strip().lower().startswith(LEGACY_PREFIXES):
        return None
    return builtin_name(module)


def builtin_names() -> list[str]:
    """Every built-in name and alias."""
    return [*BUILTIN_TYPES, *ALIASES]


@cache
def entry_point_names() -> frozenset[str]:
    """Names of provider classes installed through the entry-point group."""
    return frozenset(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def known_provider_names() -> list[str]:
    """Built-ins, aliases and installed entry points (for hints and validation)."""
    return sorted({*builtin_names(), *entry_point_names()})
