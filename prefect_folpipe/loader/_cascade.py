"""Config cascade (spec §5.0) and provider resolution (spec §6.4).

Merge rules: scalars child wins, lists replace, dicts deep-merge (child keys win). Only keys a
task.yaml actually sets take part (``model_dump(exclude_unset=True)``), so "not said" never
overrides an ancestor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

from ..errors import Diagnostic, suggest
from ..workflow.config import NO_LIMIT, ProviderConfig, TaskConfig
from ..workflow.providers import builtin_name, builtin_names, builtin_of_module, entry_point_names
from ..workflow.tree import EffectiveSettings, ResolvedProvider
from ._yaml import SourceMap

_BLOCK_KEYS = frozenset(ProviderConfig.model_fields)
_PROVIDER_HINT = "declare it under the root task.yaml `providers:` block, or use a built-in name"


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``: dicts merge recursively, anything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class Cascade:
    """What a task inherits from its ancestors, already merged."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    agent: Mapping[str, Any] = field(default_factory=dict)
    retry_on: tuple[str, ...] | None = None
    security: Mapping[str, Any] = field(default_factory=dict)

    def child(self, config: TaskConfig) -> Cascade:
        """The cascade as seen by a task with ``config`` (its own keys applied)."""
        retry_on = self.retry_on
        if "retry_on" in config.conditions.model_fields_set:
            retry_on = tuple(config.conditions.retry_on or ())
        agent = config.agent.model_dump(exclude_unset=True) if config.agent else {}
        return Cascade(
            settings=deep_merge(self.settings, config.settings.model_dump(exclude_unset=True)),
            agent=deep_merge(self.agent, agent),
            retry_on=retry_on,
            security=deep_merge(self.security, config.security.model_dump(exclude_unset=True)),
        )

    def effective_settings(self) -> EffectiveSettings:
        return _effective(_freeze(self.settings), self.retry_on, _freeze(self.security))


def _freeze(value: Any) -> Any:
    """Hashable form of plain data (for the memo of identical cascades)."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("\0list", *(_freeze(v) for v in value))
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple) and value and value[0] == "\0list":
        return [_thaw(v) for v in value[1:]]
    if isinstance(value, tuple):
        return {k: _thaw(v) for k, v in value}
    return value


@cache
def _effective(settings: Any, retry_on: tuple[str, ...] | None, security: Any) -> EffectiveSettings:
    values = {k: v for k, v in _thaw(settings).items() if v is not None}
    if isinstance(values.get("cache"), dict):  # cache: {across_runs, ttl} means cache on
        scope = values.pop("cache")
        values["cache"] = True
        values["cache_across_runs"] = scope.get("across_runs")
        if scope.get("ttl") is not None:
            values["cache_expiration"] = scope["ttl"]
    if values.get("timeout") == NO_LIMIT:
        values.pop("timeout")
    for key in ("retry_delay_seconds", "tags"):
        if isinstance(values.get(key), list):
            values[key] = tuple(values[key])
    values.update((k, v) for k, v in _thaw(security).items() if v is not None)
    known = {f.name for f in fields(EffectiveSettings)}
    return EffectiveSettings(**{k: v for k, v in values.items() if k in known}, retry_on=retry_on)


# --- providers -----------------------------------------------------------------------------


@dataclass
class ProviderTable:
    """The root ``providers:`` block, checked once; resolves a task's provider."""

    blocks: dict[str, ProviderConfig]
    types: dict[str, str]
    default: str | None
    diagnostics: list[Diagnostic]
    _memo: dict[str, ResolvedProvider | None] = field(default_factory=dict)

    @classmethod
    def from_root(cls, config: TaskConfig, source: SourceMap) -> ProviderTable:
        raw = config.providers or {}
        default = raw.get("default")
        blocks = {k: v for k, v in raw.items() if isinstance(v, ProviderConfig)}
        table = cls(blocks, {}, default if isinstance(default, str) else None, [])
        for key, block in blocks.items():
            table._check_block(key, block, source)
        if table.default is not None and not table.knows(table.default):
            table.diagnostics.append(
                _unknown_provider(table.default, table, source, ("providers", "default"), "")
            )
        return table

    def knows(self, name: str) -> bool:
        return name in self.blocks or builtin_name(name) is not None

    def names(self) -> list[str]:
        return sorted(set(self.blocks) | set(builtin_names()))

    def _check_block(self, key: str, block: ProviderConfig, source: SourceMap) -> None:
        kind = adapter_type(key, block)
        if kind is None:
            self.diagnostics.append(_unknown_type(key, block, source))
            return
        self.types[key] = kind
        if kind != "custom":
            for extra in block.model_extra or {}:
                self.diagnostics.append(
                    unknown_provider_key(extra, source, ("providers", key, extra), "", key)
                )

    def resolve(self, agent: Mapping[str, Any]) -> ResolvedProvider | None:
        """Provider of a task whose cascaded ``agent`` block is ``agent``; None if unset."""
        memo_key = json.dumps(agent, sort_keys=True, default=str)
        if memo_key not in self._memo:
            self._memo[memo_key] = self._resolve(agent)
        return self._memo[memo_key]

    def _resolve(self, agent: Mapping[str, Any]) -> ResolvedProvider | None:
        name = agent.get("provider") or self.default
        if not name or not self.knows(name):
            return None
        block = self.blocks.get(name)
        kind = self.types.get(name) if block is not None else builtin_name(name)
        if kind is None:
            return None
        settings = block.model_dump(exclude_unset=True) if block is not None else {}
        overrides = {k: v for k, v in agent.items() if k != "provider"}
        config = ProviderConfig.model_validate(deep_merge(settings, overrides))
        return ResolvedProvider(name=name, type=kind, config=config)


def adapter_type(key: str, block: ProviderConfig) -> str | None:
    """Which adapter a block uses: by ``type:``, else its key, else ``module:``."""
    if block.type is not None:
        builtin = builtin_name(block.type)
        if builtin is not None:
            return builtin
        return "custom" if block.type in entry_point_names() else None
    if builtin_name(key) is not None:
        return builtin_name(key)
    if block.module:
        return builtin_of_module(block.module) or "custom"
    return None


def _unknown_type(key: str, block: ProviderConfig, source: SourceMap) -> Diagnostic:
    if block.type is not None:
        close = suggest(block.type, builtin_names())
        return Diagnostic(
            "FP162",
            f"provider {key!r} has unknown type {block.type!r}",
            source.file,
            source.line(("providers", key, "type")),
            "",
            f"did you mean {close!r}?" if close else f"types: {', '.join(builtin_names())}",
        )
    return Diagnostic(
        "FP162",
        f"cannot tell which adapter provider {key!r} uses",
        source.file,
        source.line(("providers", key)),
        "",
        f"add `type:` ({', '.join(builtin_names())}) or `module:` for a custom provider",
    )


def _unknown_provider(
    name: str, table: ProviderTable, source: SourceMap, loc: tuple[str, ...], task: str
) -> Diagnostic:
    close = suggest(name, table.names(), cutoff=0.7)
    return Diagnostic(
        "FP160",
        f"unknown provider {name!r}",
        source.file,
        source.line(loc),
        task,
        f"did you mean {close!r}? " + _PROVIDER_HINT if close else _PROVIDER_HINT,
    )


def unknown_provider_key(
    key: str, source: SourceMap, loc: tuple[str, ...], task: str, provider: str
) -> Diagnostic:
    """FP161: a key a built-in provider does not take (extra keys are for custom providers)."""
    close = suggest(key, sorted(_BLOCK_KEYS - {"type", "module"}))
    return Diagnostic(
        "FP161",
        f"unknown key {key!r} for built-in provider {provider!r}",
        source.file,
        source.line(loc),
        task,
        f"did you mean {close!r}?" if close else "extra keys are allowed only with `module:`",
    )


def check_task_provider(
    config: TaskConfig,
    resolved: ResolvedProvider | None,
    table: ProviderTable,
    source: SourceMap,
    task: str,
) -> list[Diagnostic]:
    """A task's own ``agent:`` block: known provider name, no unknown keys for built-ins."""
    if config.agent is None:
        return []
    out = []
    name = config.agent.provider
    if name is not None and not table.knows(name):
        out.append(_unknown_provider(name, table, source, ("agent", "provider"), task))
    if resolved is not None and resolved.type != "custom":
        for extra in config.agent.model_extra or {}:
            out.append(unknown_provider_key(extra, source, ("agent", extra), task, resolved.name))
    return out
