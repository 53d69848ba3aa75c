"""What a run cost, per task and per model, with budget headroom (Prefect-free).

Built from the run's budget ledger (every model call of the run, failed attempts and Dask
workers included) after the run: paid input and output tokens, the cached part of the input
(Anthropic cache reads, OpenAI cached tokens), calls and tokens replayed from the journal
(free), and the estimated USD cost from the price table (``workflow.pricing``). Tasks restored
from checkpoints made no call and cost nothing. Rendered as the run's cost artifact, the
summary table's cost columns, the terminal summary and the run record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COLUMNS = ("calls", "replayed", "input", "cached", "output", "replayed tokens", "cost $")


@dataclass
class CostReport:
    """A run's cost: rows per task and per model, budgets, totals (JSON-friendly dicts)."""

    tasks: list[dict[str, Any]] = field(default_factory=list)
    models: list[dict[str, Any]] = field(default_factory=list)
    budgets: list[dict[str, Any]] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)

    @property
    def total_usd(self) -> float:
        return round(sum(row["cost_usd"] for row in self.tasks), 6)

    def totals(self) -> dict[str, Any]:
        keys = ("model_calls", "replayed_calls", "input_tokens", "cached_tokens")
        keys += ("output_tokens", "replayed_tokens")
        total = {key: sum(row[key] for row in self.tasks) for key in keys}
        return {**total, "cost_usd": self.total_usd}

    def for_task(self, path: str) -> dict[str, Any] | None:
        return next((row for row in self.tasks if row["task"] == path), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "models": self.models,
            "budgets": self.budgets,
            "total": self.totals(),
            "unpriced_models": self.unpriced,
        }


def _row(name_key: str, name: str, totals: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name_key: name,
        "model_calls": int(totals.get("model_calls", 0)),
        "replayed_calls": int(totals.get("replayed_calls", 0)),
        "input_tokens": int(totals.get("input_tokens", 0)),
        "cached_tokens": int(totals.get("cache_read_tokens", 0)),
        "output_tokens": int(totals.get("output_tokens", 0)),
        "replayed_tokens": int(totals.get("replayed_tokens", 0)),
        "cost_usd": round(float(totals.get("cost_usd", 0.0)), 6),
    }


def cost_report(
    by_task: Mapping[str, Mapping[str, Any]],
    usage: Mapping[str, Any],
    paths: Sequence[str] | None = None,
) -> CostReport:
    """The report from the ledger's ``report()`` (per task) and ``usage()`` (models, budgets);
    ``paths`` keeps only those tasks (``run-task`` reports its subtree)."""
    wanted = set(paths) if paths is not None else None
    tasks = [
        _row("task", path, totals)
        for path, totals in sorted(by_task.items())
        if wanted is None or path in wanted
    ]
    models = [_row("model", model, totals) for model, totals in (usage.get("models") or {}).items()]
    return CostReport(
        tasks=tasks,
        models=models,
        budgets=list(usage.get("budgets") or []),
        unpriced=sorted(usage.get("unpriced_models") or []),
    )


def _cells(row: Mapping[str, Any]) -> list[str]:
    return [
        str(row["model_calls"]),
        str(row["replayed_calls"]),
        f"{row['input_tokens']:,}",
        f"{row['cached_tokens']:,}",
        f"{row['output_tokens']:,}",
        f"{row['replayed_tokens']:,}",
        f"{row['cost_usd']:.4f}",
    ]


def _table(title: str, rows: Sequence[Mapping[str, Any]], total: Mapping[str, Any]) -> list[str]:
    lines = [f"| {title} | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for row in rows:
        name = row.get("task", row.get("model")) or "(root)"
        lines.append(f"| `{_plain(name)}` | " + " | ".join(_cells(row)) + " |")
    lines.append("| **total** | " + " | ".join(f"**{c}**" for c in _cells(total)) + " |")
    return lines


def _plain(text: str) -> str:
    return str(text).replace("|", "/").replace("`", "'")


def render_markdown(report: CostReport, workflow: str) -> str:
    """The cost artifact: per task, per model, budgets with their headroom."""
    total = report.totals()
    lines = [
        f"# Cost of {workflow}: ${report.total_usd:.4f}",
        "",
        "Paid tokens only; `cached` is the part of the input read from the provider's prompt "
        "cache (Anthropic cache reads, OpenAI cached tokens); `replayed` calls were answered "
        "from the journal for free. $ from the price table (`pricing:` in the root task.yaml "
        "overrides it).",
        "",
        *_table("task", report.tasks, total),
        "",
        *_table("model", report.models, total),
    ]
    if report.budgets:
        lines += ["", "## Budgets", "", "| scope | budget | used | headroom |", "|---|---|---|---|"]
        for budget in report.budgets:
            lines += _budget_lines(budget)
    if report.unpriced:
        lines += ["", f"No price for: {', '.join(report.unpriced)} (counted as $0)."]
    return "\n".join(lines)


def _budget_lines(budget: Mapping[str, Any]) -> list[str]:
    scope = _plain(budget["scope"])
    lines = []
    if "token_budget" in budget:
        lines.append(
            f"| {scope} | {budget['token_budget']:,} tokens | {budget['tokens_used']:,} | "
            f"{budget['tokens_left']:,} tokens |"
        )
    if "cost_budget_usd" in budget:
        lines.append(
            f"| {scope} | ${budget['cost_budget_usd']:.4f} | ${budget['cost_used_usd']:.4f} | "
            f"${budget['cost_left_usd']:.4f} |"
        )
    return lines
