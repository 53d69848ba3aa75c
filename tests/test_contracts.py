"""The public contracts (Python API, CLI, run document) exercised end to end, where no
narrower test already covers them.

One rich workflow runs twice through the Python API (``run_workflow``, then ``folder_to_flow``
from checkpoints) and once through the CLI with the provider chosen by environment variables.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import write_files

from prefect_folpipe import (
    WorkflowValidationError,
    folder_to_flow,
    load_workflow,
    run_workflow,
    validate_workflow,
)

RUN_KEYS = {"status", "flow_run_id", "context", "tasks", "usage"}
TASK_KEYS = {
    "path",
    "name",
    "status",
    "attempts",
    "iterations",
    "model_calls",
    "replayed_calls",
    "tool_calls",
    "usage",
    "duration_s",
    "error",
}

PRE_RUN_PY = """\
def run(ctx, task):
    ctx.context["pre_seen"] = {
        "name": task.name,
        "path": task.path,
        "config_name": type(task.config).__name__,
        "root": str(ctx.workflow_root),
        "task_dir": str(ctx.task_dir),
        "state_is_context": ctx.state is ctx.context,
    }
    ctx.logger.info("pre_run ran")
"""

POST_RUN_PY = """\
from prefect_folpipe import Hook


class RecordApproval(Hook):
    def run(self, ctx, task):
        ctx.context["post_saw_approved"] = ctx.context.get("approved")
"""

PRE_RUN_SH = """\
printf '%s' "$FOLPIPE_CONTEXT" > seen_context.json
echo '{"shell_hook": "ran"}'
"""

SEARCH_TOOL = """\
from prefect_folpipe import ToolContext, tool


@tool(description="Search an API.")
def search_api(ctx: ToolContext, query: str) -> str:
    return f"results for {query}"
"""

REPLIES = {
    "latency_s": 0.01,
    "tasks": {
        "fetch_data": [
            {"tool_calls": [{"name": "search_api", "arguments": {"query": "prefect"}}]},
            {"echo": True, "delay": 0.01},
        ],
        "review_cv": [{"error": "rate_limit"}, {"output": {"approved": True, "feedback": "ok"}}],
        "loop/step": [{"output": {"done": False}}, {"output": {"done": True}}],
        "step": ["never used: the path key wins"],
    },
    "default": "fine",
}


def rich_workflow(root: Path) -> Path:
    """Sequential root: tool call + echo, hooks, skipped branch, loop, shell hook."""
    return write_files(
        root,
        {
            "task.yaml": {
                "name": "contracts",
                "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
                "settings": {"max_retries": 2, "retry_delay_seconds": 0},
                "subtasks": {"execution_type": "sequential"},
            },
            "replies.yaml": REPLIES,
            "subtasks/10_fetch_data/instructions.md": "Fetch the data.",
            "subtasks/10_fetch_data/tools/search.py": SEARCH_TOOL,
            "subtasks/20_review_cv/instructions.md": "Review the CV.",
            "subtasks/20_review_cv/task.yaml": {"output": {"approved": "bool", "feedback": "str"}},
            "subtasks/20_review_cv/hooks/pre_run.py": PRE_RUN_PY,
            "subtasks/20_review_cv/hooks/post_run.py": POST_RUN_PY,
            "subtasks/30_optional/task.yaml": {"conditions": {"skip_if": "context.approved"}},
            "subtasks/30_optional/subtasks/x/instructions.md": "Never runs.",
            "subtasks/40_loop/task.yaml": {
                "subtasks": {
                    "execution_type": "loop",
                    "until": "context.done == true",
                    "max_iterations": 3,
                }
            },
            "subtasks/40_loop/subtasks/step/instructions.md": "Step.",
            "subtasks/40_loop/subtasks/step/task.yaml": {"output": {"done": "bool"}},
            "subtasks/50_publish/instructions.md": "Publish.",
            "subtasks/50_publish/hooks/pre_run.sh": PRE_RUN_SH,
        },
    )


def by_path(tasks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["path"]: entry for entry in tasks}


@pytest.mark.prefect
def test_python_api_run_document_hooks_and_scripted_replies(tmp_path: Path, prefect_harness):
    root = rich_workflow(tmp_path / "wf")
    result = run_workflow(root, {"seed": 1})

    assert result.status == "completed", result.error
    doc = json.loads(result.to_json())
    assert set(doc) == RUN_KEYS and doc["context"] == result.context
    tasks = by_path(result.tasks)
    assert list(tasks) == ["", "fetch_data", "review_cv", "optional", "optional/x", "loop",
                           "loop/step", "publish"]  # fmt: skip
    assert all(set(entry) == TASK_KEYS for entry in result.tasks)
    assert tasks[""]["name"] == "contracts"
    assert tasks["optional"]["status"] == tasks["optional/x"]["status"] == "skipped"
    # a loop's child reports totals over all iterations; the per-path replies key won
    assert tasks["loop/step"]["iterations"] == 2 and tasks["loop/step"]["model_calls"] == 2
    assert result.context["done"] is True and result.context["step"] == {"done": True}
    # the rate_limit entry consumed a retry, then the next entry answered
    assert tasks["review_cv"]["attempts"] == 2
    assert tasks["fetch_data"]["tool_calls"] == 1 and tasks["fetch_data"]["model_calls"] == 2
    totals = {key: sum(t["usage"][key] for t in result.tasks) for key in ("input_tokens",)}
    assert doc["usage"]["input_tokens"] == totals["input_tokens"] > 0
    # review_cv's rate-limited call counts too (a failed call is a model call)
    assert doc["usage"]["model_calls"] == sum(t["model_calls"] for t in result.tasks) == 7

    echo = result.context["fetch_data"]
    assert echo.startswith("[system]\nFetch the data.") and '"seed": 1' in echo
    assert "search_api" in echo and "results for prefect" in echo

    pre = result.context["pre_seen"]
    assert pre == {
        "name": "review_cv",
        "path": "review_cv",
        "config_name": "TaskConfig",
        "root": str(root),
        "task_dir": str(root / "subtasks/20_review_cv"),
        "state_is_context": True,
    }
    assert result.context["post_saw_approved"] is True
    assert result.context["shell_hook"] == "ran"
    seen = json.loads((root / "subtasks/50_publish/seen_context.json").read_text())
    assert seen["approved"] is True and seen["seed"] == 1

    # folder_to_flow: only `context`; a positional call returns the same plain dict (checkpoints)
    flow = folder_to_flow(root)
    again = flow({"seed": 1})
    assert type(again) is dict and again == result.context
    json.dumps(again)


@pytest.mark.prefect
def test_cli_provider_from_environment_failed_run_exits_one(tmp_path: Path, cli_env):
    root = write_files(
        tmp_path / "wf",
        {
            "task.yaml": {
                "providers": {
                    "default": "claude",
                    "claude": {"model": "claude-sonnet-4-5", "api_key_env": "NO_SUCH_KEY"},
                },
                "settings": {"max_retries": 1, "retry_delay_seconds": 0},
                "subtasks": {"execution_type": "sequential"},
            },
            "subtasks/10_draft/instructions.md": "Draft.",
            "subtasks/20_check/instructions.md": "Check.",
            "subtasks/30_branch/subtasks/leaf/instructions.md": "Leaf.",
        },
    )
    replies = write_files(
        tmp_path, {"replies.yaml": {"tasks": {"check": [{"error": "auth"}]}, "default": "ok"}}
    )
    env = {
        **cli_env,
        "FOLPIPE_PROVIDER": "scripted",
        "FOLPIPE_REPLIES": str(replies / "replies.yaml"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", "run", str(root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )

    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == RUN_KEYS and doc["status"] == "failed"
    tasks = by_path(doc["tasks"])
    assert {path: t["status"] for path, t in tasks.items()} == {
        "": "failed",
        "draft": "completed",
        "check": "failed",
        "branch": "skipped",
        "branch/leaf": "skipped",
    }
    assert tasks["check"]["attempts"] == 1 and "auth" in tasks["check"]["error"]
    assert doc["context"]["draft"] == "ok"
    assert set(doc["usage"]) == {"input_tokens", "output_tokens", "model_calls", "replayed_calls"}


def test_load_raises_every_diagnostic_and_validate_never_raises(tmp_path: Path):
    root = write_files(
        tmp_path / "bad",
        {
            "task.yaml": "settings:\n  max_retrys: 2\nsubtasks:\n  execution_type: loop\n",
            "subtasks/10_a/instructions.md": "A",
            "subtasks/20_a/instructions.md": "A again",
        },
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow(root)
    codes = {d.code for d in info.value.diagnostics}
    assert {"FP103", "FP150", "FP110"} <= codes
    assert {d.code for d in validate_workflow(root)} >= codes
    for odd in (tmp_path / "missing", root / "task.yaml", tmp_path):
        assert all(d.code.startswith("FP") for d in validate_workflow(odd))


def test_names_paths_and_provider_blocks(tmp_path: Path):
    root = write_files(
        tmp_path / "wf",
        {
            "task.yaml": {
                "providers": {
                    "default": "claude",
                    "claude": {"model": "m1"},
                    "mine": {"type": "openai", "model": "m2"},
                    "legacy": {"module": "agentflow.providers.ollama", "model": "m3"},
                    "openai": {"model": "m4"},
                }
            },
            "subtasks/20_review_cv/instructions.md": "R",
            "subtasks/20_review_cv/subtasks/07_inner/instructions.md": "I",
            "subtasks/20_review_cv/subtasks/07_inner/task.yaml": {"agent": {"provider": "mine"}},
            "subtasks/30_x/task.yaml": {"name": "renamed", "agent": {"provider": "legacy"}},
            "subtasks/30_x/instructions.md": "X",
            "subtasks/40_y/task.yaml": {"agent": {"provider": "openai"}},
            "subtasks/40_y/instructions.md": "Y",
        },
    )
    workflow = load_workflow(root)
    found = {t.path: (t.name, t.provider.type) for t in workflow.root.walk()}
    assert found == {
        "": ("wf", "anthropic"),
        "review_cv": ("review_cv", "anthropic"),
        "review_cv/inner": ("inner", "openai"),
        "renamed": ("renamed", "ollama"),
        "y": ("y", "openai"),
    }
