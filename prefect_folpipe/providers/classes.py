"""Provider classes: which class a provider block names (a built-in adapter, an entry point,
a ``module:`` class) and how one is built from its block.

How a provider class is built: if it has a ``from_config(config, env)`` classmethod, that is
called with the block (``workflow.config.ProviderConfig``) and a ``ProviderEnv``; otherwise the
class is called with the block's settings as keyword arguments (extra keys included).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ConfigError, did_you_mean
from ..workflow.config import ProviderConfig
from ..workflow.providers import (
    BUILTIN_TYPES,
    ENTRY_POINT_GROUP,
    builtin_of_module,
    canonical_type,
    known_provider_names,
)
from .base import Provider

MODULES: dict[str, str] = {name: f"prefect_folpipe.providers.{name}" for name in BUILTIN_TYPES}
"""Built-in adapter -> its module (imported on first use)."""
BLOCK_KEYS = frozenset({"type", "module"})

SecretResolver = Callable[[str], str]


@dataclass(frozen=True)
class ProviderEnv:
    """What a provider's ``from_config`` may need beyond its block."""

    name: str
    """Key of the providers block (``claude``) or the built-in name."""
    workflow_root: Path | None = None
    secret_resolver: SecretResolver | None = None
    replies: Path | None = None
    """Replies/cassette file given on the command line (overrides the block's ``replies``)."""


def resolve_provider_class(type_name: str | None, module: str | None = None) -> Any:
    """The class (or factory) for a block: ``module:`` first, then built-ins, then entry points."""
    builtin = builtin_of_module(module) if module else None
    if module and builtin is None:
        return load_module_provider(module)
    name = builtin or canonical_type(type_name or "")
    if name in MODULES:
        return _load_builtin(name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return _load_entry_point(ep)
    hint = did_you_mean(name, known_provider_names()) or (
        f"use one of {', '.join(known_provider_names())}, or `module: pkg.mod:Class`"
    )
    raise ConfigError(f"unknown provider type {name!r}", code="FP301", hint=hint)


def _load_builtin(name: str) -> Any:
    module_name = MODULES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        hint = (
            f"install the SDK: pip install 'prefect-folpipe[{name}]'"
            if missing != module_name
            else f"the {name!r} provider is not available in this installation"
        )
        raise ConfigError(
            f"provider {name!r} cannot be loaded: module {missing!r} is missing",
            code="FP302",
            hint=hint,
        ) from None
    return find_provider_class(module, expected_name=name)


def _load_entry_point(ep: Any) -> Any:
    try:
        return ep.load()
    except Exception as exc:
        raise ConfigError(
            f"provider entry point {ep.name!r} ({ep.value}) failed to load: {exc}",
            code="FP302",
            hint=f"check the package that registers it in the {ENTRY_POINT_GROUP!r} group",
        ) from None


def load_module_provider(spec: str) -> Any:
    """``pkg.mod`` (its single provider class) or ``pkg.mod:ClassName``."""
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        legacy = module_name.startswith("agentflow.")
        raise ConfigError(
            f"custom provider module {module_name!r} cannot be imported: {exc}",
            code="FP302",
            hint="folpipe 0.1.8's provider modules other than ollama and http are not provided: "
            "use a built-in `type:`, or `--provider scripted --replies FILE` for offline runs"
            if legacy
            else "make the module importable (installed, or on PYTHONPATH)",
        ) from None
    if class_name:
        found = getattr(module, class_name, None)
        if found is None:
            raise ConfigError(
                f"module {module_name!r} has no attribute {class_name!r}",
                code="FP303",
                hint="write `module: package.module:ClassName`",
            )
        return found
    return find_provider_class(module)


def find_provider_class(module: ModuleType, *, expected_name: str | None = None) -> type:
    """The one provider-shaped class defined in ``module`` (an async ``complete`` method)."""
    candidates = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and inspect.iscoroutinefunction(getattr(obj, "complete", None))
        and not inspect.isabstract(obj)
        and not getattr(obj, "_is_protocol", False)
    ]
    if len(candidates) > 1 and expected_name:
        named = [c for c in candidates if getattr(c, "name", None) == expected_name]
        candidates = named or candidates
    if len(candidates) == 1:
        return candidates[0]
    names = sorted(c.__name__ for c in candidates)
    problem = f"several provider classes ({', '.join(names)})" if names else "no provider class"
    raise ConfigError(
        f"module {module.__name__!r} has {problem}",
        code="FP303",
        hint="a provider class has an `async def complete(self, request)` method; name it "
        "with `module: package.module:ClassName`",
    )


def build_provider(factory: Any, config: ProviderConfig, env: ProviderEnv) -> Provider:
    """Instantiate a provider class: ``from_config(config, env)`` if it has one, else kwargs."""
    try:
        if hasattr(factory, "from_config"):
            provider = factory.from_config(config, env)
        else:
            provider = factory(**block_settings(config))
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"provider {env.name!r} rejected its settings: {exc}",
            code="FP307",
            hint="check the keys of this provider block in the root task.yaml",
        ) from None
    if not inspect.iscoroutinefunction(getattr(provider, "complete", None)):
        raise ConfigError(
            f"provider {env.name!r} ({type(provider).__name__}) has no async `complete` method",
            code="FP303",
            hint="implement `async def complete(self, request: ModelRequest) -> ModelResponse`",
        )
    return provider


def block_settings(config: ProviderConfig) -> dict[str, Any]:
    """The block's settings as keyword arguments (unset/None and type/module dropped)."""
    data = config.model_dump(exclude_none=True)
    return {key: value for key, value in data.items() if key not in BLOCK_KEYS}
