"""Token and cost budgets, and the usage/cost accounting of one run.

A ``BudgetLedger`` lives for one workflow run and is its one usage ledger: the run report's
``model_calls`` and tokens come from it. The agent loop calls ``before_call(task)`` before
every model call and ``after_call(task, usage)`` after it, or ``failed_call(task)`` when the
call raised (it counts as a model call with no tokens: tokens are only what the provider
reported); every call is charged to its
task and to each of the task's ancestors, so a budget declared on a task limits that task
*and everything below it*: on a leaf it is a task budget, on a branch a branch budget, on the
root the workflow's budget. Retries and loop iterations are charged like any other call
(the ledger outlives attempts); tasks restored from cache make no call and cost nothing, and
calls answered from the journal (``replayed``) are counted apart: free and outside every budget.

``settings.token_budget`` counts input + output tokens; ``settings.cost_budget`` counts the
estimated USD cost from ``providers.pricing``. A call is refused (``BudgetExceeded``) once a
budget is reached, before the model is asked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from .._messages import Usage
from ..errors import BudgetExceeded, ConfigError
from ..workflow.pricing import PriceTable, ancestor_paths, unpriced_budgets
from ..workflow.tree import Task, Workflow


@dataclass
class Totals:
    """Usage and estimated cost of a set of model calls."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    replayed_calls: int = 0
    replayed_tokens: int = 0
    """Input + output tokens the replayed answers once cost (not paid again)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def charge(self, usage: Usage, cost: float) -> None:
        self.model_calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cost_usd += cost

    def replay(self, usage: Usage) -> None:
        self.replayed_calls += 1
        self.replayed_tokens += usage.input_tokens + usage.output_tokens

    def add(self, other: Totals) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6)
        return data


class BudgetLedger:
    """One per run: checks budgets before each model call and charges usage after it."""

    def __init__(self, workflow: Workflow, *, prices: PriceTable | None = None) -> None:
        self.workflow = workflow
        self.prices = prices or PriceTable(workflow.root.config.pricing)
        self._tasks = {task.path: task for task in workflow.tasks()}
        self._own: dict[str, Totals] = {}
        self._subtree: dict[str, Totals] = {}
        self._models: dict[str, Totals] = {}
        self._lock = threading.Lock()
        self.unpriced_models: set[str] = set()
        self._check_cost_budgets_are_priced()

    # -- the two calls the agent loop makes ---------------------------------------------------

    def before_call(self, task: Task) -> None:
        """Raise ``BudgetExceeded`` if a budget of the task or an ancestor is already reached."""
        with self._lock:
            for node, used in self._budget_scopes(task.path):
                self._check(node, used, task)

    def after_call(self, task: Task, usage: Usage, *, model: str | None = None) -> float:
        """Charge one call to the task and its ancestors; returns its estimated cost."""
        provider_type = task.provider.type if task.provider else None
        model = model or (task.provider.model if task.provider else None)
        cost = self.prices.cost(model, usage, provider_type)
        if cost is None:
            if model:
                self.unpriced_models.add(model)
            cost = 0.0
        with self._lock:
            self._own.setdefault(task.path, Totals()).charge(usage, cost)
            self._models.setdefault(model or "(unknown)", Totals()).charge(usage, cost)
            for path in ancestor_paths(task.path):
                self._subtree.setdefault(path, Totals()).charge(usage, cost)
        return cost

    def replayed(self, task: Task, usage: Usage, *, model: str | None = None) -> float:
        """A call answered from the journal: counted, never charged (0 tokens, $0)."""
        model = model or (task.provider.model if task.provider else None)
        with self._lock:
            self._own.setdefault(task.path, Totals()).replay(usage)
            self._models.setdefault(model or "(unknown)", Totals()).replay(usage)
        return 0.0

    def failed_call(self, task: Task) -> None:
        """Count a call that raised (auth, rate limit, server error, ...): one model call, no
        tokens and no cost, since the provider reported none."""
        with self._lock:
            self._own.setdefault(task.path, Totals()).charge(Usage(), 0.0)
            for path in ancestor_paths(task.path):
                self._subtree.setdefault(path, Totals()).charge(Usage(), 0.0)

    # -- reporting -----------------------------------------------------------------------------

    def task_totals(self, path: str) -> Totals:
        """Usage of the calls made by the task at ``path`` itself."""
        with self._lock:
            return Totals(**asdict(self._own.get(path, Totals())))

    def subtree_totals(self, path: str) -> Totals:
        """Usage of the task at ``path`` and all its descendants."""
        with self._lock:
            return Totals(**asdict(self._subtree.get(path, Totals())))

    def run_totals(self) -> Totals:
        """Usage of the whole run."""
        return self.subtree_totals("")

    def report(self) -> dict[str, dict[str, Any]]:
        """``{task path: own totals}`` for every task that made a call (JSON-friendly)."""
        with self._lock:
            return {path: totals.to_dict() for path, totals in sorted(self._own.items())}

    def model_report(self) -> dict[str, dict[str, Any]]:
        """``{model: totals}`` of every model that answered (JSON-friendly)."""
        with self._lock:
            return {model: totals.to_dict() for model, totals in sorted(self._models.items())}

    def budgets(self) -> list[dict[str, Any]]:
        """Each declared budget with what is used and what is left (the report's headroom)."""
        rows = []
        with self._lock:
            for path, node in self._tasks.items():
                if _declares_budget(node):
                    rows.append(_budget_row(node, self._subtree.get(path, Totals())))
        return rows

    # -- internals -----------------------------------------------------------------------------

    def _budget_scopes(self, path: str) -> Iterator[tuple[Task, Totals]]:
        for scope in ancestor_paths(path):
            node = self._tasks.get(scope)
            if node is not None and _declares_budget(node):
                yield node, self._subtree.get(scope, Totals())

    def _check(self, node: Task, used: Totals, task: Task) -> None:
        settings = node.config.settings
        scope = _scope_label(node)
        label = repr(task.path) if task.path else "<root>"
        if settings.token_budget is not None and used.total_tokens >= settings.token_budget:
            raise BudgetExceeded(
                f"token budget of {scope} reached: {used.total_tokens:,} of "
                f"{settings.token_budget:,} tokens used; the next model call of task {label} "
                "was not made (raise settings.token_budget)"
            )
        if settings.cost_budget is not None and used.cost_usd >= settings.cost_budget:
            raise BudgetExceeded(
                f"cost budget of {scope} reached: ${used.cost_usd:.4f} of "
                f"${settings.cost_budget:.4f} used; the next model call of task {label} was "
                "not made (raise settings.cost_budget)"
            )

    def _check_cost_budgets_are_priced(self) -> None:
        """A cost budget over a model without a price could never trigger: say so up front."""
        for _, task in unpriced_budgets(self.workflow, self.prices):
            model = task.provider.model if task.provider else None
            raise ConfigError(
                f"task {task.path or '<root>'!r} has a cost budget, but model {model!r} has no "
                "price",
                code="FP332",
                hint=f"add it to the root task.yaml: pricing: {{{model}: "
                "{input_per_mtok: N, output_per_mtok: N}}",
            )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _declares_budget(task: Task) -> bool:
    settings = task.config.settings
    return settings.token_budget is not None or settings.cost_budget is not None


def _budget_row(node: Task, used: Totals) -> dict[str, Any]:
    settings = node.config.settings
    row: dict[str, Any] = {"task": node.path, "scope": _scope_label(node)}
    if settings.token_budget is not None:
        row["token_budget"] = settings.token_budget
        row["tokens_used"] = used.total_tokens
        row["tokens_left"] = max(0, settings.token_budget - used.total_tokens)
    if settings.cost_budget is not None:
        row["cost_budget_usd"] = settings.cost_budget
        row["cost_used_usd"] = round(used.cost_usd, 6)
        row["cost_left_usd"] = round(max(0.0, settings.cost_budget - used.cost_usd), 6)
    return row


def _scope_label(node: Task) -> str:
    if not node.path:
        return "the workflow"
    kind = "branch" if node.children else "task"
    return f"{kind} {node.path!r}"
