"""What the Prefect UI shows of a run: the per-task report names each output key once, and the
summary table fits a 1,400 px laptop screen."""

from __future__ import annotations

from typing import Any

from builders import make_task

from prefect_folpipe.compile.report.artifacts import SUMMARY_ERROR_CHARS, render_task, summary_rows
from prefect_folpipe.workflow.context import answer_delta

LONG_ERROR = (
    "OutputValidationError [FP312]: task 'research/market/competitors' the answer did not "
    "match the declared output after 3 attempts: competitor_notes: expected a list, got str; "
    + "x"
    * 400
)


def _row(path: str, status: str = "completed", **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "path": path,
        "name": path.rsplit("/", 1)[-1],
        "status": status,
        "attempts": 1,
        "iterations": None,
        "model_calls": 2,
        "replayed_calls": 0,
        "tool_calls": 1,
        "usage": {"input_tokens": 12_345, "output_tokens": 678},
        "duration_s": 12.3456,
        "error": None,
    }
    return {**row, **extra}


def _section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_report_shows_each_declared_output_once() -> None:
    task = make_task("review", config={"output": ["approved", "notes"]})
    delta = answer_delta(task, {"approved": True, "notes": "Clear."})
    assert delta["review"] == {"approved": True, "notes": "Clear."}  # the context keeps both
    markdown = render_task(task, "review", {"delta": delta, "model_calls": 1})
    output = _section(markdown, "Output")
    assert output.count('"approved"') == 1 and output.count('"notes"') == 1
    assert '"review"' not in output
    assert "`approved`, `notes`: at the top of the context and under `review`" in output


def test_an_undeclared_answer_and_a_plain_delta_are_shown_as_they_are() -> None:
    task = make_task("draft")
    markdown = render_task(task, "draft", {"delta": {"draft": "Hello."}, "text": "Hello."})
    assert '"draft": "Hello."' in _section(markdown, "Output")
    named = make_task("final_cv", config={"output": ["final_cv"]})  # no copy: shown whole
    delta = answer_delta(named, {"final_cv": "Jane"})
    assert '"final_cv": "Jane"' in _section(
        render_task(named, "final_cv", {"delta": delta}), "Output"
    )


def test_the_summary_has_no_empty_or_repeated_columns() -> None:
    rows = summary_rows([_row("research"), _row("write", status="cached")])
    assert list(rows[0]) == [
        "task", "status", "attempts", "model_calls", "tokens", "seconds", "error",
    ]  # fmt: skip
    assert rows[1]["status"] == "cached"
    assert (rows[0]["tokens"], rows[0]["seconds"]) == (13_023, 12.35)


def test_optional_columns_appear_when_a_task_has_a_value() -> None:
    class Costs:
        def for_task(self, path: str) -> dict[str, Any]:
            return {"cost_usd": 0.0123456789, "cached_tokens": 10} if path == "write" else {}

    rows = summary_rows([_row("loop", iterations=3), _row("write", replayed_calls=2)], Costs())
    assert {"iterations", "replayed", "cost_usd"} <= set(rows[0])
    assert rows[1]["cost_usd"] == 0.012346 and rows[0]["cost_usd"] == 0.0
    assert "cached_tokens" not in rows[0]  # the cost artifact has the token split


def test_a_long_error_is_cut_to_one_short_cell() -> None:
    [row] = summary_rows([_row("research/market/competitors", "failed", error=LONG_ERROR)])
    assert len(row["error"]) == SUMMARY_ERROR_CHARS and row["error"].endswith("…")
    assert row["error"].startswith("FP312 task 'research/market/competitors' the answer")


def test_the_summary_fits_a_laptop_screen() -> None:
    """Prefect's table draws each column as wide as its widest cell or header: at about 7 px a
    character and 32 px of padding a column, a busy run's table stays within 1,400 px."""

    class Costs:
        def for_task(self, path: str) -> dict[str, Any]:
            return {"cost_usd": 0.123456}

    rows = summary_rows(
        [
            _row("research/market/competitors[12]", "failed", attempts=3, error=LONG_ERROR),
            _row("refine/review", iterations=5, replayed_calls=4, model_calls=120),
            _row("publish", "skipped"),
        ],
        Costs(),
    )
    widths = [
        max(len(column), *(len(str(row[column])) for row in rows)) * 7 + 32 for column in rows[0]
    ]
    assert sum(widths) <= 1400, dict(zip(rows[0], widths, strict=True))
