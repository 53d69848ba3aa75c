"""Budget ledger: task/branch/workflow budgets, charging ancestors, costs from the price table."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.agent.budget import BudgetLedger
from prefect_folpipe.errors import BudgetExceeded, ConfigError
from prefect_folpipe.providers import Usage
from prefect_folpipe.workflow.config import ProviderConfig, Settings, TaskConfig
from prefect_folpipe.workflow.pricing import DEFAULT_PRICES, Price, PriceTable, ancestor_paths
from prefect_folpipe.workflow.tree import EffectiveSettings, ResolvedProvider, Task, Workflow

SONNET = ResolvedProvider(
    "claude", "anthropic", ProviderConfig(type="anthropic", model="claude-sonnet-4-5-20250929")
)


def node(
    path: str,
    children: tuple[Task, ...] = (),
    provider: ResolvedProvider | None = SONNET,
    **settings: Any,
) -> Task:
    return Task(
        name=path.rsplit("/", 1)[-1] or "root",
        path=path,
        folder=Path("."),
        config=TaskConfig(settings=Settings(**settings)),
        settings=EffectiveSettings(),
        instructions="do it",
        children=children,
        provider=provider,
    )


def workflow(root: Task, **config: Any) -> Workflow:
    if config:
        root = Task(**{**root.__dict__, "config": root.config.model_copy(update=config)})
    return Workflow(root=root, root_dir=Path("."), name="wf")


def tree(**budgets: dict[str, Any]) -> tuple[Workflow, dict[str, Task]]:
    """root -> research -> (a, b); root -> write."""
    a = node("research/a", **budgets.get("a", {}))
    b = node("research/b", **budgets.get("b", {}))
    research = node("research", (a, b), **budgets.get("research", {}))
    write = node("write", **budgets.get("write", {}))
    root = node("", (research, write), **budgets.get("root", {}))
    tasks = {"root": root, "research": research, "a": a, "b": b, "write": write}
    return workflow(root), tasks


def test_ancestor_paths() -> None:
    assert ancestor_paths("a/b/c") == ["a/b/c", "a/b", "a", ""]
    assert ancestor_paths("") == [""]


def test_task_budget_stops_the_next_call() -> None:
    wf, t = tree(a={"token_budget": 100})
    ledger = BudgetLedger(wf)
    ledger.before_call(t["a"])
    ledger.after_call(t["a"], Usage(60, 30))
    ledger.before_call(t["a"])  # 90 < 100: still allowed
    ledger.after_call(t["a"], Usage(10, 5))
    with pytest.raises(BudgetExceeded) as caught:
        ledger.before_call(t["a"])
    message = str(caught.value)
    assert "task 'research/a'" in message and "105 of 100" in message
    ledger.before_call(t["b"])  # a sibling is not limited by a's budget


def test_branch_budget_covers_all_descendants() -> None:
    wf, t = tree(research={"token_budget": 50})
    ledger = BudgetLedger(wf)
    ledger.after_call(t["a"], Usage(20, 10))
    ledger.after_call(t["b"], Usage(15, 5))
    with pytest.raises(BudgetExceeded, match="branch 'research'"):
        ledger.before_call(t["b"])
    with pytest.raises(BudgetExceeded):
        ledger.before_call(t["research"])
    ledger.before_call(t["write"])  # outside the branch


def test_workflow_budget_covers_everything() -> None:
    wf, t = tree(root={"token_budget": 10})
    ledger = BudgetLedger(wf)
    ledger.after_call(t["write"], Usage(8, 2))
    with pytest.raises(BudgetExceeded, match="the workflow") as caught:
        ledger.before_call(t["a"])
    assert caught.value.code == "FP330" and not caught.value.retryable


def test_retries_count_because_the_ledger_outlives_attempts() -> None:
    wf, t = tree(a={"token_budget": 30})
    ledger = BudgetLedger(wf)
    for _attempt in range(3):
        ledger.before_call(t["a"])
        ledger.after_call(t["a"], Usage(8, 2))
    with pytest.raises(BudgetExceeded):
        ledger.before_call(t["a"])
    assert ledger.task_totals("research/a").model_calls == 3


def test_cost_budget_and_totals() -> None:
    wf, t = tree(root={"cost_budget": 0.02})
    ledger = BudgetLedger(wf)
    cost = ledger.after_call(t["a"], Usage(1000, 1000))
    assert cost == pytest.approx((1000 * 3 + 1000 * 15) / 1e6)
    ledger.before_call(t["a"])
    ledger.after_call(t["b"], Usage(0, 1000))
    with pytest.raises(BudgetExceeded, match=r"cost budget of the workflow reached: \$0\.03"):
        ledger.before_call(t["write"])
    research = ledger.subtree_totals("research")
    assert (research.model_calls, research.output_tokens) == (2, 2000)
    assert ledger.run_totals().cost_usd == pytest.approx(0.033)
    assert ledger.subtree_totals("write").model_calls == 0
    assert set(ledger.report()) == {"research/a", "research/b"}
    assert ledger.report()["research/a"]["cost_usd"] == pytest.approx(0.018)


def test_cost_budget_needs_a_price() -> None:
    custom = ResolvedProvider("mine", "openai", ProviderConfig(type="openai", model="my-ft"))
    root = node("", (node("x", provider=custom),), cost_budget=1.0)
    with pytest.raises(ConfigError) as caught:
        BudgetLedger(workflow(root))
    assert caught.value.code == "FP332" and "my-ft" in str(caught.value)
    priced = workflow(root, pricing={"my-ft": {"input_per_mtok": 1, "output_per_mtok": 2}})
    ledger = BudgetLedger(priced)
    assert ledger.after_call(priced.root.children[0], Usage(1_000_000, 0)) == pytest.approx(1.0)


def test_unpriced_model_without_cost_budget_costs_nothing() -> None:
    custom = ResolvedProvider("mine", "openai", ProviderConfig(type="openai", model="my-ft"))
    root = node("", (node("x", provider=custom),))
    ledger = BudgetLedger(workflow(root))
    assert ledger.after_call(root.children[0], Usage(100, 100)) == 0.0
    assert ledger.unpriced_models == {"my-ft"}


def test_ledger_pickles() -> None:
    wf, t = tree(root={"token_budget": 1000})
    ledger = BudgetLedger(wf)
    ledger.after_call(t["a"], Usage(5, 5))
    copy = pickle.loads(pickle.dumps(ledger))
    assert copy.run_totals().total_tokens == 10
    copy.before_call(t["a"])


def test_prices_longest_prefix_and_overrides() -> None:
    table = PriceTable({"gpt-4o": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}})
    assert table.price("gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert table.price("gpt-4o-2024-08-06") == Price(1.0, 1.0)
    assert table.price("anthropic/claude-opus-4-5") == DEFAULT_PRICES["claude-opus-4-5"]
    assert table.price("unknown") is None
    assert table.cost("llama3.1", Usage(10**6, 10**6), "ollama") == 0.0


def test_cache_tokens_are_priced_as_cache() -> None:
    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=1_000_000)
    assert price.cost(usage) == pytest.approx(0.3)
    usage = Usage(input_tokens=1_000_000, cache_write_tokens=1_000_000)
    assert price.cost(usage) == pytest.approx(3.75)


def test_bad_pricing_entry() -> None:
    with pytest.raises(ConfigError) as caught:
        PriceTable({"m": {"input": 1.0}})
    assert caught.value.code == "FP331"
