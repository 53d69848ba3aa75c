"""Provider resolution (as folpipe 0.1.8 reads provider blocks).

Any task.yaml may hold a ``providers:`` block; it applies to that task's subtree:

1. the provider **name** of a task is the nearest ``agent.provider`` (the ``agent:`` blocks
   cascade), else the nearest ``providers.default``;
2. its **settings** are every ancestor's block of that name, deep-merged from the root down
   (a child may override only ``model``), then the cascaded ``agent:`` keys over them;
3. the **adapter** is the merged block's ``type:``, else its ``module:`` (a legacy
   ``agentflow.providers.<name>`` path names a built-in, any other module is a custom
   class), else its key when that is a built-in name.

``type: http`` (folpipe 0.1.8's generic HTTP provider, also ``module:
agentflow.providers.http``) maps to the OpenAI adapter (``format: openai``, the default) or the
Anthropic adapter (``format: anthropic``; a trailing ``/v1`` of ``base_url`` is dropped since
the SDK adds it). Ollama blocks take the Ollama SDK's ``options`` names (``num_ctx``, ...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import Diagnostic, Severity, suggest
from ..workflow.config import ProviderConfig, TaskConfig
from ..workflow.providers import (
    HTTP_FORMATS,
    PROVIDER_OPTIONS,
    builtin_name,
    builtin_names,
    builtin_of_module,
    entry_point_names,
    ignored_key_hint,
    is_http_block,
)
from ..workflow.tree import ResolvedProvider
from ._yaml import SourceMap

_BLOCK_KEYS = frozenset(ProviderConfig.model_fields)
_PROVIDER_HINT = "declare it in a `providers:` block of this task or an ancestor, or use a built-in"


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
class ProviderScope:
    """The provider blocks a task sees: its ancestors' and its own, merged by name."""

    blocks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    default: str | None = None

    def child(self, config: TaskConfig) -> ProviderScope:
        """The scope as seen by a task with ``config`` (its own block applied)."""
        if not config.providers:
            return self
        blocks = dict(self.blocks)
        default = self.default
        for key, block in config.providers.items():
            if isinstance(block, str):
                default = block
            else:
                blocks[key] = deep_merge(blocks.get(key, {}), block.model_dump(exclude_unset=True))
        return ProviderScope(blocks, default)

    def knows(self, name: str) -> bool:
        return name in self.blocks or builtin_name(name) is not None

    def names(self) -> list[str]:
        return sorted(set(self.blocks) | set(builtin_names()))


def adapter_type(key: str, block: ProviderConfig) -> str | None:
    """Which adapter a block uses: ``type:``, else ``module:``, else its key (None: unknown)."""
    if is_http_block(block):
        return HTTP_FORMATS.get(str((block.model_extra or {}).get("format", "openai")))
    if block.type is not None:
        builtin = builtin_name(block.type)
        if builtin is not None:
            return builtin
        return "custom" if block.type in entry_point_names() else None
    if block.module:
        return builtin_of_module(block.module) or "custom"
    return builtin_name(key)


def adapter_config(kind: str, block: ProviderConfig) -> ProviderConfig:
    """The block as its adapter reads it (an http block rewritten for the SDK adapter)."""
    if not is_http_block(block):
        return block
    data = block.model_dump(exclude_unset=True)
    data.pop("format", None)
    data.pop("module", None)
    data["type"] = kind
    base = data.get("base_url")
    if kind == "anthropic" and isinstance(base, str) and base.rstrip("/").endswith("/v1"):
        data["base_url"] = base.rstrip("/")[: -len("/v1")]
    return ProviderConfig.model_validate(data)


def check_provider_blocks(
    config: TaskConfig, scope: ProviderScope, source: SourceMap, task: str
) -> list[Diagnostic]:
    """A task's own ``providers:`` block (merged with what it overrides), at its lines."""
    out: list[Diagnostic] = []
    for key, block in (config.providers or {}).items():
        if isinstance(block, str):
            if not scope.knows(block):
                out.append(unknown_provider(block, scope, source, ("providers", key), task))
            continue
        merged = ProviderConfig.model_validate(scope.blocks[key])
        kind = adapter_type(key, merged)
        if kind is None:
            out.append(_unknown_type(key, merged, source))
        elif kind != "custom":
            out += _key_problems(key, kind, block, merged, source)
    return [replace(d, task=task) for d in out]


@dataclass
class ProviderTable:
    """Resolves tasks' providers (one resolution per distinct scope and ``agent:`` block)."""

    _memo: dict[str, ResolvedProvider | None] = field(default_factory=dict)

    def resolve(self, agent: Mapping[str, Any], scope: ProviderScope) -> ResolvedProvider | None:
        """Provider of a task with the cascaded ``agent`` block in ``scope``; None if unset."""
        memo_key = json.dumps([agent, scope.blocks, scope.default], sort_keys=True, default=str)
        if memo_key not in self._memo:
            self._memo[memo_key] = _resolve(agent, scope)
        return self._memo[memo_key]


def _resolve(agent: Mapping[str, Any], scope: ProviderScope) -> ResolvedProvider | None:
    name = agent.get("provider") or scope.default
    if not name or not scope.knows(name):
        return None
    settings = scope.blocks.get(name)
    block = ProviderConfig.model_validate(settings) if settings is not None else None
    kind = adapter_type(name, block) if block is not None else builtin_name(name)
    if kind is None:
        return None
    overrides = {k: v for k, v in agent.items() if k != "provider"}
    config = ProviderConfig.model_validate(deep_merge(settings or {}, overrides))
    return ResolvedProvider(name=name, type=kind, config=adapter_config(kind, config))


def _key_problems(
    key: str, kind: str, own: ProviderConfig, merged: ProviderConfig, source: SourceMap
) -> list[Diagnostic]:
    """Of the keys this block writes: FP161 unknown, FP164 without effect; FP165 an http
    block without ``base_url``."""
    out: list[Diagnostic] = []
    if is_http_block(merged) and not merged.base_url and "type" in own.model_fields_set:
        out.append(
            Diagnostic(
                "FP165",
                f"provider {key!r} is `type: http` but has no `base_url`",
                source.file,
                source.line(("providers", key)),
                "",
                "set `base_url:` to the server's API root, e.g. http://localhost:8000/v1",
            )
        )
    for extra, value in (own.model_extra or {}).items():
        if extra == "format" and is_http_block(merged):
            continue  # chose the adapter
        out += _extra_key(extra, value, kind, source, ("providers", key, extra), "", key)
    return out


def _extra_key(
    key: str,
    value: Any,
    kind: str,
    source: SourceMap,
    loc: tuple[str, ...],
    task: str,
    provider: str,
) -> list[Diagnostic]:
    """FP164 for a key that is accepted but has no effect, FP161 for an unknown one."""
    hint = ignored_key_hint(kind, key, value)
    if hint is not None:
        return [
            Diagnostic(
                "FP164",
                f"`{key}: {value}` has no effect on the {kind} provider",
                source.file,
                source.line(loc),
                task,
                hint,
                Severity.WARNING,
            )
        ]
    if key in PROVIDER_OPTIONS.get(kind, ()):
        return []
    return [unknown_provider_key(key, source, loc, task, provider, kind)]


def _unknown_type(key: str, block: ProviderConfig, source: SourceMap) -> Diagnostic:
    if block.type is not None and not is_http_block(block):
        close = suggest(block.type, [*builtin_names(), "http"])
        return Diagnostic(
            "FP162",
            f"provider {key!r} has unknown type {block.type!r}",
            source.file,
            source.line(("providers", key, "type")),
            "",
            f"did you mean {close!r}?" if close else f"types: {', '.join(builtin_names())}, http",
        )
    if is_http_block(block):
        fmt = (block.model_extra or {}).get("format")
        return Diagnostic(
            "FP165",
            f"provider {key!r}: `format` must be one of {', '.join(HTTP_FORMATS)} (got {fmt!r})",
            source.file,
            source.line(("providers", key, "format")),
            "",
            "`format: openai` (an OpenAI-compatible server) or `format: anthropic`",
        )
    return Diagnostic(
        "FP162",
        f"cannot tell which adapter provider {key!r} uses",
        source.file,
        source.line(("providers", key)),
        "",
        f"add `type:` ({', '.join(builtin_names())}, http) or `module:` for a custom provider",
    )


def unknown_provider(
    name: str, scope: ProviderScope, source: SourceMap, loc: tuple[str, ...], task: str
) -> Diagnostic:
    """FP160: a provider name no block in scope and no built-in answers."""
    close = suggest(name, scope.names(), cutoff=0.7)
    return Diagnostic(
        "FP160",
        f"unknown provider {name!r}",
        source.file,
        source.line(loc),
        task,
        f"did you mean {close!r}? " + _PROVIDER_HINT if close else _PROVIDER_HINT,
    )


def unknown_provider_key(
    key: str, source: SourceMap, loc: tuple[str, ...], task: str, provider: str, kind: str
) -> Diagnostic:
    """FP161: a key a built-in provider does not take (extra keys are for custom providers)."""
    choices = sorted((_BLOCK_KEYS - {"type", "module"}) | set(PROVIDER_OPTIONS.get(kind, ())))
    close = suggest(key, choices)
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
    scope: ProviderScope,
    source: SourceMap,
    task: str,
) -> list[Diagnostic]:
    """A task's own ``agent:`` block: known provider name, no unknown keys for built-ins."""
    if config.agent is None:
        return []
    out = []
    name = config.agent.provider
    if name is not None and not scope.knows(name):
        out.append(unknown_provider(name, scope, source, ("agent", "provider"), task))
    if resolved is not None and resolved.type != "custom":
        for extra, value in (config.agent.model_extra or {}).items():
            loc = ("agent", extra)
            out += _extra_key(extra, value, resolved.type, source, loc, task, resolved.name)
    return out
