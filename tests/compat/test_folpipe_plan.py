"""``folpipe plan PATH`` (point 12): what a run would do, read from the run's own Plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from prefect_folpipe.cli import cli
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.validate import load_workflow

pytestmark = pytest.mark.prefect


def plan(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["plan", str(path), "--json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def by_path(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{s['path']}[{s['iteration']}]" if s["iteration"] else s["path"]: s for s in doc["steps"]
    }


PIPELINE = {
    "task.yaml": {
        "context": {"topic": "agents", "mode": "full"},
        "subtasks": {"execution_type": "priority_groups"},
    },
    "subtasks/10_fetch/task.yaml": {"input": {"required": ["topic"]}, "output": ["facts"]},
    "subtasks/10_fetch/instructions.md": "Fetch facts about the topic.",
    "subtasks/10_other/task.yaml": {"input": {"required": ["topic"]}, "output": ["other"]},
    "subtasks/10_other/instructions.md": "Other facts.",
    "subtasks/20_write/task.yaml": {"input": {"required": ["facts"]}, "output": ["draft"]},
    "subtasks/20_write/instructions.md": "Write.",
    "subtasks/30_polish/task.yaml": {"conditions": {"skip_if": "context.mode == 'quick'"}},
    "subtasks/30_polish/instructions.md": "Polish.",
    "subtasks/40_check/task.yaml": {"conditions": {"skip_if": "context.draft == 'bad'"}},
    "subtasks/40_check/instructions.md": "Check.",
    "replies.yaml": {
        "tasks": {
            "fetch": [{"output": {"facts": "F"}}],
            "other": [{"output": {"other": "O"}}],
            "write": [{"output": {"draft": "D"}}],
        },
        "default": "ok",
    },
}


def test_order_checkpoints_and_why_not(make_workflow, run):  # type: ignore[no-untyped-def]
    path = make_workflow(PIPELINE)
    _, before = plan(path)
    waves = [(s["wave"], s["path"]) for s in before["steps"]]
    assert waves == [("1", "fetch"), ("1", "other"), ("2", "write"), ("3", "polish"),
                     ("4", "check")]  # fmt: skip
    node = build_plan(load_workflow(path)).root
    assert [list(w) for w in node.waves] == [["fetch", "other"], ["write"], ["polish"], ["check"]]
    steps = by_path(before)
    assert steps["fetch"]["reasons"] == ["no checkpoint yet"]
    assert steps["check"]["status"] == "maybe skipped"  # its skip_if reads write's output
    assert "draft" in steps["check"]["reasons"][0]
    assert before["totals"]["from_checkpoints"] == 0

    assert run(path).status == "completed"
    _, after = plan(path)
    assert {s["status"] for s in after["steps"]} == {"checkpoint"}
    assert after["totals"]["model_calls"] == 0

    (path / "subtasks/20_write/instructions.md").write_text("Write well.")
    _, edited = plan(path, "--context", json.dumps({"mode": "quick"}))
    steps = by_path(edited)
    assert steps["fetch"]["status"] == "checkpoint"
    assert steps["write"]["status"] == "runs"
    assert steps["write"]["reasons"] == ["instructions.md changed"]
    assert steps["polish"]["status"] == "skipped"
    assert steps["polish"]["reasons"] == ["skip_if: context.mode == 'quick'"]
    assert steps["check"]["status"] == "maybe skipped"

    _, changed = plan(path, "--context", json.dumps({"topic": "prefect"}))
    steps = by_path(changed)
    assert steps["fetch"]["reasons"] == ["input 'topic' changed"]
    assert "comes from fetch" in steps["write"]["reasons"][0]
    _, fresh = plan(path, "--fresh")
    assert {s["status"] for s in fresh["steps"]} == {"runs", "maybe skipped"}


def test_loops_walk_the_checkpointed_iterations(make_workflow, run):  # type: ignore[no-untyped-def]
    path = make_workflow(
        {
            "task.yaml": {
                "subtasks": {
                    "execution_type": "loop",
                    "max_iterations": 4,
                    "until": "context.approved == true",
                }
            },
            "subtasks/10_draft/task.yaml": {"output": ["draft"]},
            "subtasks/10_draft/instructions.md": "Draft.",
            "subtasks/20_review/task.yaml": {"output": {"approved": "bool"}},
            "subtasks/20_review/instructions.md": "Review.",
            "replies.yaml": {
                "tasks": {
                    "draft": [{"output": {"draft": "d1"}}, {"output": {"draft": "d2"}}],
                    "review": [{"output": {"approved": False}}, {"output": {"approved": True}}],
                }
            },
        }
    )
    _, before = plan(path)
    draft = by_path(before)["draft[1]"]
    assert draft["estimate"]["model_calls"] == 4  # up to max_iterations
    assert run(path).status == "completed"
    _, after = plan(path)
    assert list(by_path(after)) == ["draft[1]", "review[1]", "draft[2]", "review[2]"]
    assert {s["status"] for s in after["steps"]} == {"checkpoint"}


def test_cost_preview_is_priced_and_flagged_against_budgets(make_workflow):  # type: ignore[no-untyped-def]
    path = make_workflow(
        {
            "task.yaml": {
                "providers": {
                    "default": "claude",
                    "claude": {"model": "claude-sonnet-4-5", "max_tokens": 1000},
                },
                "settings": {"token_budget": 1500, "cost_budget": 1.0},
            },
            "subtasks/a/instructions.md": "x" * 4000,
            "subtasks/b/instructions.md": "Short.",
        }
    )
    code, doc = plan(path)
    assert code == 1  # over the token budget
    a = by_path(doc)["a"]["estimate"]
    assert a["model_calls"] == 1 and a["output_tokens"] == 1000
    assert a["input_tokens"] >= 1000  # ~4 characters a token
    expected = (a["input_tokens"] * 3.0 + 1000 * 15.0) / 1_000_000
    assert a["cost"] == pytest.approx(expected, rel=1e-6)
    [budget] = doc["budgets"]
    assert budget["exceeded"] is True and budget["estimated_tokens"] > 1500
    text = CliRunner().invoke(cli, ["plan", str(path)])
    assert "EXCEEDED" in text.output
    offline = CliRunner().invoke(cli, ["plan", str(path), "--provider", "scripted", "--json"])
    assert json.loads(offline.stdout)["totals"]["cost"] == 0.0
