"""Run names, tags and artifacts read back through Prefect's client."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from records import recorded_task_runs

from prefect_folpipe.compile.options import RunOptions

pytestmark = pytest.mark.prefect


def _files(**root: Any) -> dict[str, Any]:
    return {
        "task.yaml": {
            "name": "observed",
            "subtasks": {"execution_type": "sequential"},
            **root,
        },
        "replies.yaml": {
            "tasks": {
                "research": [{"output": {"notes": "n1"}}],
                "review": [{"output": {"approved": False}}, {"output": {"approved": True}}],
            }
        },
        "subtasks/10_research/instructions.md": "Research the topic: find three facts.",
        "subtasks/10_research/task.yaml": {"output": ["notes"], "settings": {"tags": ["llm"]}},
        "subtasks/20_refine/task.yaml": {
            "subtasks": {
                "execution_type": "loop",
                "until": "context.approved",
                "max_iterations": 3,
            }
        },
        "subtasks/20_refine/subtasks/review/instructions.md": "Review the notes.",
        "subtasks/20_refine/subtasks/review/task.yaml": {"output": ["approved"]},
    }


async def _flow_run(flow_run_id: str) -> Any:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return await client.read_flow_run(flow_run_id)


async def _artifacts(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from prefect_folpipe import flush_artifacts

    assert flush_artifacts(30), "artifacts still queued after 30 s"

    async with get_client() as client:
        return await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


def test_task_run_names_follow_paths_and_loop_iterations(make_workflow, run):
    result = run(make_workflow(_files()))
    assert result.status == "completed"
    expected = {"research", "refine", "refine/review[1]", "refine/review[2]"}
    runs = asyncio.run(recorded_task_runs(result.flow_run_id, names=expected))
    assert expected <= {r.name for r in runs}


def test_with_task_tags_off_only_declaring_tasks_are_tagged(make_workflow, run):
    result = run(make_workflow(_files()), options=RunOptions(task_tags=False))
    flow_run = asyncio.run(_flow_run(result.flow_run_id))
    assert {"folpipe", "workflow:observed", "provider:scripted"} <= set(flow_run.tags)
    recorded = recorded_task_runs(result.flow_run_id, 4, names={"research", "refine/review[1]"})
    runs = {r.name: r for r in asyncio.run(recorded)}
    assert {"folpipe", "workflow:observed", "provider:scripted", "llm"} <= set(
        runs["research"].tags
    )
    assert runs["refine/review[1]"].tags == []


def test_every_task_run_is_tagged_by_default(make_workflow, run):
    result = run(make_workflow(_files()))
    runs = asyncio.run(recorded_task_runs(result.flow_run_id, 4))
    for task_run in runs:
        assert {"folpipe", "workflow:observed"} <= set(task_run.tags), task_run.name
    review = next(r for r in runs if r.name == "refine/review[1]")
    assert "provider:scripted" in review.tags


def test_markdown_artifact_per_task_and_a_summary_table(make_workflow, run):
    result = run(make_workflow(_files()))
    artifacts = asyncio.run(_artifacts(result.flow_run_id))
    by_key = {a.key: a for a in artifacts}
    assert "observed-research" in by_key
    research = by_key["observed-research"]
    assert research.type == "markdown"
    assert "Research the topic" in research.data
    assert "n1" in research.data
    assert research.task_run_id is not None and research.flow_run_id is not None
    assert "observed-summary" in by_key
    summary = by_key["observed-summary"]
    assert summary.type == "table"
    rows = {row["task"]: row for row in json.loads(summary.data)}
    assert rows["research"]["status"] == "completed" and rows["research"]["calls"] == 1
    assert rows["refine/review"]["iters"] == 2
    assert all(key == key.lower() and "/" not in key for key in by_key if key)


async def _subflow_runs(parent_flow_run_id: str, names: list[str]) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterName,
        FlowRunFilterParentFlowRunId,
    )

    mine = FlowRunFilterParentFlowRunId(any_=[parent_flow_run_id])  # not another test's runs
    async with get_client() as client:
        deadline = time.monotonic() + 60
        while True:
            runs = await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    name=FlowRunFilterName(any_=names), parent_flow_run_id=mine
                )
            )
            runs = [r for r in runs if r.parent_task_run_id is not None]
            if len(runs) >= len(names) or time.monotonic() > deadline:
                return runs
            await asyncio.sleep(0.1)


def test_branch_as_subflow_shows_nested_flow_runs_named_by_path(make_workflow, run):
    files = _files(settings={"branch_as": "subflow"})
    result = run(make_workflow(files, name="subflowed"))
    assert result.status == "completed"
    runs = asyncio.run(_subflow_runs(result.flow_run_id, ["refine"]))
    assert [r.name for r in runs] == ["refine"]
    assert "/" not in runs[0].flow_id.hex


def test_a_tag_concurrency_limit_applies_and_unlimited_tags_still_reach_the_runs(
    make_workflow, run
):
    """Task runs whose tags have no Prefect concurrency limit are tagged as they start (no
    lease request); a tag with a limit keeps Prefect's lease, so the limit holds."""
    import uuid

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    solo = f"solo-{uuid.uuid4().hex[:8]}"

    async def limit(create: bool) -> None:
        async with get_client() as client:
            if create:
                await client.create_global_concurrency_limit(
                    GlobalConcurrencyLimitCreate(name=f"tag:{solo}", limit=1)
                )
            else:
                await client.delete_global_concurrency_limit_by_name(f"tag:{solo}")

    files = {
        "task.yaml": {"name": "limited"},
        "replies.yaml": {"latency_s": 1.0},
        "subtasks/a/instructions.md": "A.",
        "subtasks/a/task.yaml": {"settings": {"tags": [solo]}},
        "subtasks/b/instructions.md": "B.",
        "subtasks/b/task.yaml": {"settings": {"tags": [solo]}},
    }
    unlimited = run(make_workflow(files))  # no limit yet: a and b run side by side
    asyncio.run(limit(True))
    try:
        started = time.monotonic()
        limited = run(make_workflow(files))
        elapsed = time.monotonic() - started
    finally:
        asyncio.run(limit(False))
    assert limited.status == unlimited.status == "completed"
    assert elapsed >= 2.0, "the limit of 1 should have run a and b one after the other"
    assert max(unlimited.task(n)["duration_s"] for n in "ab") < 1.9  # nobody waited
    assert max(limited.task(n)["duration_s"] for n in "ab") >= 1.9  # one waited for the slot
    for result in (unlimited, limited):
        recorded = recorded_task_runs(result.flow_run_id, names={"a", "b"})
        runs = {r.name: r for r in asyncio.run(recorded)}
        for name in ("a", "b"):
            assert {solo, "folpipe", "workflow:limited"} <= set(runs[name].tags), name


def test_a_failed_task_leaves_its_report_and_readable_state_messages(make_workflow, run):
    """The artifact of a failed pass (issue 12, point 6): the error, the instructions as sent,
    each rejected answer with its validation error, the tool calls; and the UI's state
    messages are text, not a repr with literal \\n and \\'."""
    files = {
        "task.yaml": {"name": "failing", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {
            "tasks": {
                "judge": [
                    {"tool_calls": [{"name": "lookup", "arguments": {"term": "prefect"}}]},
                    "It's fine.\nReally, it's fine.",
                    "Still 'no' JSON here.",
                ]
            }
        },
        "subtasks/judge/instructions.md": "Judge the draft; answer with `approved`.",
        "subtasks/judge/task.yaml": {
            "output": {"approved": "bool"},
            "settings": {"output_retries": 1},
        },
        "subtasks/judge/tools.md": (
            "## lookup\nLook a term up.\n\n```python\n"
            "def lookup(term: str) -> str:\n    return 'found ' + term\n```\n"
        ),
    }
    result = run(make_workflow(files))
    assert result.status == "failed"
    artifacts = asyncio.run(_artifacts(result.flow_run_id))
    report = next(a for a in artifacts if a.key == "failing-judge")
    text = report.data
    assert text.startswith("# judge: failed")
    assert "## Error" in text and "FP312" in text
    assert "## Instructions as sent" in text and "answer with `approved`" in text
    rejected = text.split("## Rejected answers")[1].split("## Tool calls")[0]
    assert rejected.count("### ") == 2
    assert "It's fine.\nReally, it's fine." in rejected and "Still 'no' JSON here." in rejected
    assert "## Tool calls" in text and "`lookup`" in text and "found prefect" in text

    runs = asyncio.run(recorded_task_runs(result.flow_run_id, 1))
    judge = next(r for r in runs if r.name == "judge")
    flow_run = asyncio.run(_flow_run(result.flow_run_id))
    for message in (judge.state.message, flow_run.state.message):
        assert message and "\\n" not in message and "\\'" not in message, message
        assert "answer: It's fine. Really, it's fine." in message


def _logged_task_run_files() -> dict[str, Any]:
    tool = "## lookup\n\nLook a number up.\n\n```python\ndef lookup(n: int) -> str:\n"
    tool += "    return f'value {n}'\n```\n"
    return {
        "task.yaml": {"name": "logged"},
        "replies.yaml": {
            "tasks": {
                "agent": [
                    {"tool_calls": [{"name": "lookup", "arguments": {"n": 7}}]},
                    {"output": {"answer": "value 7"}},
                ]
            }
        },
        "subtasks/agent/instructions.md": "Look 7 up, then answer.",
        "subtasks/agent/task.yaml": {"output": ["answer"]},
        "subtasks/agent/tools.md": tool,
    }


async def _task_run_logs(flow_run_id: str, task_run_id: str) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    await APILogHandler.aflush()
    async with get_client() as client:
        deadline = time.monotonic() + 30
        while True:
            logs = await client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
            )
            mine = [log.message for log in logs if str(log.task_run_id) == task_run_id]
            if any("model call 2" in m for m in mine) or time.monotonic() > deadline:
                return mine
            await asyncio.sleep(0.1)


def test_a_quick_tasks_model_and_tool_lines_reach_the_ui_as_one_entry(make_workflow, run):
    """Every line is kept, in order; a task that finishes within a second is one row."""
    import logging

    task_runs = logging.getLogger("prefect.task_runs")  # the suite logs at WARNING; users INFO
    level = task_runs.level
    task_runs.setLevel(logging.INFO)
    try:
        result = run(make_workflow(_logged_task_run_files()))
    finally:
        task_runs.setLevel(level)
    assert result.status == "completed", result.error
    [agent] = asyncio.run(recorded_task_runs(result.flow_run_id, 1, names={"agent"}))
    messages = asyncio.run(_task_run_logs(result.flow_run_id, str(agent.id)))
    [entry] = [m for m in messages if "model call" in m]
    first, tool, last = entry.splitlines()
    assert first.startswith("model call 1: ") and first.endswith(", 1 tool call")
    assert tool.startswith("tool lookup ok in ")
    assert last.startswith("model call 2: ") and last.endswith(", 0 tool calls")
