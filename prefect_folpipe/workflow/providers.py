"""Provider names of the folder format: built-in adapters, their aliases, legacy module paths.

The loader (which block a task uses) and the provider registry (which class answers it) both
read these, so a name means the same thing everywhere.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points
from typing import Any, Protocol

BUILTIN_TYPES: tuple[str, ...] = ("anthropic", "openai", "ollama", "scripted", "replay")
ALIASES: dict[str, str] = {"claude": "anthropic"}
LEGACY_PREFIXES: tuple[str, ...] = ("agentflow.providers.", "prefect_folpipe.providers.")
"""``module: agentflow.providers.<name>`` (folpipe 0.1.8's import name) names a built-in."""
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


HTTP_FORMATS: dict[str, str] = {"openai": "openai", "anthropic": "anthropic"}
"""``type: http`` blocks (folpipe 0.1.8): ``format:`` -> the SDK adapter that speaks it."""
OLLAMA_OPTIONS: tuple[str, ...] = (
    "numa", "num_ctx", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all",
    "vocab_only", "use_mmap", "use_mlock", "embedding_only", "num_thread", "num_keep", "seed",
    "num_predict", "top_k", "top_p", "tfs_z", "typical_p", "repeat_last_n", "repeat_penalty",
    "presence_penalty", "frequency_penalty", "mirostat", "mirostat_tau", "mirostat_eta",
    "penalize_newline", "stop", "min_p",
)  # fmt: skip
"""Ollama's model ``options``: passed through as given (``num_predict`` wins over
``max_tokens``)."""
PROVIDER_OPTIONS: dict[str, tuple[str, ...]] = {
    "ollama": (*OLLAMA_OPTIONS, "tool_calling", "format"),
}
"""Keys a built-in adapter takes beyond the common block keys."""


class _Block(Protocol):
    type: str | None
    module: str | None


def is_http_block(block: _Block) -> bool:
    """``type: http`` or ``module: agentflow.providers.http`` (folpipe 0.1.8's http provider)."""
    if block.type is not None:
        return block.type.strip().lower() == "http"
    module = (block.module or "").strip().lower()
    return any(module == f"{prefix}http" for prefix in LEGACY_PREFIXES[:1])


def ignored_key_hint(kind: str, key: str, value: Any) -> str | None:
    """Why a key folpipe 0.1.8 accepted does nothing here (None: the key works)."""
    if kind == "ollama" and key == "tool_calling" and value != "native":
        return (
            "tools are always called natively; a model without tool support fails before "
            "the run (FP323): pick one that lists `tools` in `ollama show`"
        )
    if kind == "ollama" and key == "format":
        return "typed outputs are requested as a JSON schema; `json_mode: false` turns that off"
    return None
