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
    assert list(rows[0]) == ["task", "status", "tries", "calls", "tokens", "secs", "note"]
    assert rows[1]["status"] == "cached"
    assert (rows[0]["tokens"], rows[0]["secs"]) == (13_023, 12.35)


def test_optional_columns_appear_when_a_task_has_a_value() -> None:
    class Costs:
        def for_task(self, path: str) -> dict[str, Any]:
            return {"cost_usd": 0.0123456789, "cached_tokens": 10} if path == "write" else {}

    rows = summary_rows([_row("loop", iterations=3), _row("write", replayed_calls=2)], Costs())
    assert {"iters", "replayed", "usd"} <= set(rows[0])
    assert rows[1]["usd"] == 0.012346 and rows[0]["usd"] == 0.0
    assert "cached_tokens" not in rows[0]  # the cost artifact has the token split


def test_a_long_error_is_cut_to_one_short_cell() -> None:
    [row] = summary_rows([_row("research/market/competitors", "failed", error=LONG_ERROR)])
    assert len(row["note"]) == SUMMARY_ERROR_CHARS and row["note"].endswith("…")
    assert row["note"].startswith("FP312 task 'research/")


def test_an_answered_gate_is_a_short_note_who_answered_is_in_it() -> None:
    declined = {
        "target": "publish",
        "answer": {"approved": False, "reason": "x" * 80},
        "answered_by": "Prefect UI",
        "answered_at": "2026-12-04T19:02:57+00:00",
    }
    error = "declined: approved=false ... (Prefect UI, ...); skip_if skipped the task"
    rows = summary_rows([
        _row("publish", "skipped", error=error, approvals=[declined]),
        _row("deploy", approvals=[{**declined, "answer": {"approved": True}}]),
    ])  # fmt: skip
    assert [row["note"] for row in rows] == ["declined by Prefect UI", "approved by Prefect UI"]


def test_the_summary_fits_a_laptop_screen() -> None:
    """Prefect's table draws each column as wide as its widest cell or header: at about 7 px a
    character and 32 px of padding a column, a run's table stays within the 830 px the
    artifact page gives it in a 1,400 px window (menu and details beside it; checked by eye,
    docs/images/run-summary.png); a busy one, every optional column on and long paths, within
    1,200 px (the page then scrolls the table)."""
    plain = summary_rows(
        [
            _row("research/competitors", "failed", attempts=3, error=LONG_ERROR),
            _row("write/review", iterations=2),
            _row("publish", "skipped", error="declined: ...", approvals=[{"answer": {}}]),
        ]
    )
    assert _width(plain) <= 830, _width(plain)

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
    assert _width(rows) <= 1200, _width(rows)


def _width(rows: list[dict[str, Any]]) -> int:
    return sum(
        max(len(column), *(len(str(row[column])) for row in rows)) * 7 + 32 for column in rows[0]
    )
