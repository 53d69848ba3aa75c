"""Estimated cost of model calls: a default price table the root task.yaml can override.

The defaults are **approximate** public list prices in USD per million tokens, captured for
common Claude and GPT models; providers change prices, so treat the result as an estimate and
put the prices you actually pay in the root ``task.yaml``::

    pricing:
      claude-sonnet-4-5: {input_per_mtok: 3.0, output_per_mtok: 15.0}
      my-finetune: {input_per_mtok: 1.0, output_per_mtok: 2.0, cache_read_per_mtok: 0.1}

A model matches the longest table key that its name starts with, so dated names
(``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``) find their family's price. Local
Ollama models cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .._messages import Usage
from .._process.wording import noun
from ..errors import ConfigError
from .tree import Task, Workflow

PRICE_KEYS = frozenset(
    {"input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok"}
)
FREE_PROVIDERS = frozenset({"ollama"})
PER = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens; cache prices default to the input price when not given."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        """Cost of ``usage`` (``input_tokens`` includes the cached part)."""
        read, write = usage.cache_read_tokens, usage.cache_write_tokens
        fresh = max(0, usage.input_tokens - read - write)
        read_price = (
            self.input_per_mtok if self.cache_read_per_mtok is None else (self.cache_read_per_mtok)
        )
        write_price = (
            self.input_per_mtok
            if self.cache_write_per_mtok is None
            else (self.cache_write_per_mtok)
        )
        return (
            fresh * self.input_per_mtok
            + read * read_price
            + write * write_price
            + usage.output_tokens * self.output_per_mtok
        ) / PER


def _claude(inp: float, out: float) -> Price:
    return Price(inp, out, cache_read_per_mtok=inp * 0.1, cache_write_per_mtok=inp * 1.25)


def _gpt(inp: float, out: float, cached: float) -> Price:
    return Price(inp, out, cache_read_per_mtok=cached, cache_write_per_mtok=inp)


DEFAULT_PRICES: Mapping[str, Price] = {
    # Anthropic (approximate list prices; cache reads 0.1x, 5-minute cache writes 1.25x)
    "claude-opus-4-5": _claude(5.0, 25.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4": _claude(15.0, 75.0),
    "claude-sonnet-4-5": _claude(3.0, 15.0),
    "claude-sonnet-4": _claude(3.0, 15.0),
    "claude-3-7-sonnet": _claude(3.0, 15.0),
    "claude-3-5-sonnet": _claude(3.0, 15.0),
    "claude-haiku-4-5": _claude(1.0, 5.0),
    "claude-3-5-haiku": _claude(0.8, 4.0),
    "claude-3-haiku": _claude(0.25, 1.25),
    "claude-3-opus": _claude(15.0, 75.0),
    # OpenAI (approximate list prices; cached input as listed)
    "gpt-5": _gpt(1.25, 10.0, 0.125),
    "gpt-5-mini": _gpt(0.25, 2.0, 0.025),
    "gpt-5-nano": _gpt(0.05, 0.4, 0.005),
    "gpt-4.1": _gpt(2.0, 8.0, 0.5),
    "gpt-4.1-mini": _gpt(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _gpt(0.1, 0.4, 0.025),
    "gpt-4o": _gpt(2.5, 10.0, 1.25),
    "gpt-4o-mini": _gpt(0.15, 0.6, 0.075),
    "o1": _gpt(15.0, 60.0, 7.5),
    "o3": _gpt(2.0, 8.0, 0.5),
    "o3-mini": _gpt(1.1, 4.4, 0.55),
    "o4-mini": _gpt(1.1, 4.4, 0.275),
}


class PriceTable:
    """The default prices merged with a workflow's ``pricing:`` overrides."""

    def __init__(self, overrides: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.prices: dict[str, Price] = dict(DEFAULT_PRICES)
        for model, entry in (overrides or {}).items():
            self.prices[model] = _price_from_yaml(model, entry)

    def price(self, model: str | None, provider_type: str | None = None) -> Price | None:
        """The price of ``model``: exact key, else the longest key it starts with."""
        if provider_type in FREE_PROVIDERS:
            return Price(0.0, 0.0)
        if not model:
            return None
        name = model.rsplit("/", 1)[-1]
        if name in self.prices:
            return self.prices[name]
        matches = [key for key in self.prices if name.startswith(key)]
        return self.prices[max(matches, key=len)] if matches else None

    def cost(
        self, model: str | None, usage: Usage, provider_type: str | None = None
    ) -> float | None:
        """Estimated USD cost, or ``None`` when the model has no price."""
        price = self.price(model, provider_type)
        return None if price is None else price.cost(usage)


def _price_from_yaml(model: str, entry: Mapping[str, float]) -> Price:
    unknown = sorted(set(entry) - PRICE_KEYS)
    missing = sorted({"input_per_mtok", "output_per_mtok"} - set(entry))
    if unknown or missing:
        problem = (
            f"unknown {noun(len(unknown), 'key')} {unknown}" if unknown else f"missing {missing}"
        )
        raise ConfigError(
            f"pricing for model {model!r}: {problem}",
            code="FP331",
            hint="write `pricing: {MODEL: {input_per_mtok: N, output_per_mtok: N}}` "
            "(optional: cache_read_per_mtok, cache_write_per_mtok)",
        )
    return Price(**{key: float(value) for key, value in entry.items()})


UNPRICED_OK = frozenset({"scripted", "replay"})
"""Offline providers: their calls cost nothing, so they need no price."""


def ancestor_paths(path: str) -> list[str]:
    """``a/b/c`` -> ``["a/b/c", "a/b", "a", ""]``: the task first, the root last."""
    if not path:
        return [""]
    parts = path.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), 0, -1)] + [""]


def unpriced_budgets(workflow: Workflow, prices: PriceTable) -> Iterator[tuple[Task, Task]]:
    """``(budgeted, task)`` where a ``cost_budget`` of ``budgeted`` (the nearest one) covers a
    task whose model has no price, so that budget could never trigger."""
    by_path = {task.path: task for task in workflow.tasks()}
    for task in by_path.values():
        provider = task.provider
        if provider is None or not task.runs_agent or provider.type in UNPRICED_OK:
            continue
        budgeted = [
            by_path[path]
            for path in ancestor_paths(task.path)
            if path in by_path and by_path[path].config.settings.cost_budget is not None
        ]
        if budgeted and prices.price(provider.model, provider.type) is None:
            yield budgeted[0], task
