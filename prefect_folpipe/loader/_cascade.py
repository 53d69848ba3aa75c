"""Config cascade: settings, ``agent:``, ``retry_on``, security and provider blocks
(resolved in ``_providers``).

Merge rules: scalars child wins, lists replace, dicts deep-merge (child keys win). Only keys a
task.yaml actually sets take part (``model_dump(exclude_unset=True)``), so "not said" never
overrides an ancestor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

from ..workflow.config import NO_LIMIT, TaskConfig
from ..workflow.tree import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    TRANSIENT_ERRORS,
    EffectiveSettings,
)
from ._providers import ProviderScope, deep_merge


@dataclass(frozen=True)
class Cascade:
    """What a task inherits from its ancestors, already merged."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    agent: Mapping[str, Any] = field(default_factory=dict)
    retry_on: tuple[str, ...] | None = None
    security: Mapping[str, Any] = field(default_factory=dict)
    providers: ProviderScope = field(default_factory=ProviderScope)
    _children: dict[int, tuple[TaskConfig, Cascade]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """``child`` by config (the config is kept, so its id stays its own): a second build over
    the same folder (before and after importing its tools) merges nothing again."""

    def child(self, config: TaskConfig) -> Cascade:
        """The cascade as seen by a task with ``config`` (its own keys applied)."""
        kept = self._children.get(id(config))
        if kept is not None and kept[0] is config:
            return kept[1]
        child = self._child(config)
        self._children[id(config)] = (config, child)
        return child

    def _child(self, config: TaskConfig) -> Cascade:
        retry_on = self.retry_on
        if "retry_on" in config.conditions.model_fields_set:
            retry_on = tuple(config.conditions.retry_on or ())
        agent = config.agent.model_dump(exclude_unset=True) if config.agent else {}
        return Cascade(
            settings=deep_merge(self.settings, config.settings.model_dump(exclude_unset=True)),
            agent=deep_merge(self.agent, agent),
            retry_on=retry_on,
            security=deep_merge(self.security, config.security.model_dump(exclude_unset=True)),
            providers=self.providers.child(config),
        )

    def effective_settings(self, *, loop: bool = False) -> EffectiveSettings:
        """The settings with defaults filled in (``loop``: the task runs a loop, whose
        ``timeout`` bounds the whole loop, so no default time limit is set for it)."""
        return _effective(_freeze(self.settings), self.retry_on, _freeze(self.security), loop)


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
def _effective(
    settings: Any, retry_on: tuple[str, ...] | None, security: Any, loop: bool
) -> EffectiveSettings:
    said = _thaw(settings)
    values = {k: v for k, v in said.items() if v is not None}
    if isinstance(values.get("cache"), dict):  # cache: {across_runs, ttl} means cache on
        scope = values.pop("cache")
        values["cache"] = True
        values["cache_across_runs"] = scope.get("across_runs")
        if scope.get("ttl") is not None:
            values["cache_expiration"] = scope["ttl"]
    if values.get("timeout") == NO_LIMIT:
        values.pop("timeout")
    if "timeout" not in said and not loop:
        values["timeout"] = DEFAULT_TIMEOUT
    if "max_retries" not in said:
        values["max_retries"] = DEFAULT_MAX_RETRIES
        retry_on = TRANSIENT_ERRORS if retry_on is None else retry_on
    for key in ("retry_delay_seconds", "tags"):
        if isinstance(values.get(key), list):
            values[key] = tuple(values[key])
    values.update((k, v) for k, v in _thaw(security).items() if v is not None)
    known = {f.name for f in fields(EffectiveSettings)}
    return EffectiveSettings(**{k: v for k, v in values.items() if k in known}, retry_on=retry_on)
