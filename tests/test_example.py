"""The shipped example runs end to end offline with no flags (README's first command)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.prefect

EXAMPLE = Path(__file__).parents[1] / "examples" / "research_report"


def test_research_report_runs_offline(tmp_path, run):
    workflow = shutil.copytree(EXAMPLE, tmp_path / "research_report", ignore=_no_state)
    result = run(workflow)
    assert result.status == "completed", result.tasks
    context = result.context
    assert len(context["market_facts"]) == 3 and context["competitor_notes"]
    assert context["figures"]["teams_surveyed"] == 40
    assert context["approved"] is True and context["title"] == "Agents in production"
    assert result.task("write")["iterations"] == 2
    assert result.task("research/numbers")["tool_calls"] == 1
    assert result.task("write/review")["tool_calls"] == 2
    again = run(workflow)
    assert again.usage["model_calls"] == 0
    assert {row["status"] for row in again.tasks} == {"cached"}


def _no_state(_dir: str, names: list[str]) -> list[str]:
    return [name for name in names if name == ".folpipe"]


def test_research_report_validates_without_a_warning():
    # a newcomer's `folpipe validate examples/research_report` prints no table of warnings
    from prefect_folpipe.validate import validate_workflow

    assert validate_workflow(EXAMPLE) == []
