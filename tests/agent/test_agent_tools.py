"""The agent loop end to end: real loader, scripted provider, real tools (python, shell, @tool).

The fixture workflow ``tests/fixtures/agent/toolflow`` ships its replies and a research task with
tools.md (python, async python, failing python, shell, reference), tools/words.py and hooks.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from prefect_folpipe.agent import run_task
from prefect_folpipe.errors import (
    MaxTurnsExceeded,
    MissingInputError,
    OutputValidationError,
    ProviderError,
)
from prefect_folpipe.providers.registry import ProviderOverride, ProviderPool
from prefect_folpipe.providers.scripted import ScriptedProvider
from prefect_folpipe.validate import load_workflow

FIXTURE = Path(__file__).parent.parent / "fixtures" / "agent" / "toolflow"


@pytest.fixture
def workflow_dir(tmp_path: Path) -> Path:
    target = tmp_path / "toolflow"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture
def workflow(workflow_dir: Path):
    return load_workflow(workflow_dir)


def calls(*items: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in items]}


async def research(workflow, replies, context=None, **kwargs):
    task = workflow.find("research")
    provider = ScriptedProvider({"tasks": {"research": replies}})
    return await run_task(task, workflow, context or {}, provider=provider, **kwargs)


def results_of(outcome, turn: int = 0) -> list[dict]:
    """The tool results answering the ``turn``-th tool-calling assistant message."""
    tool_messages = [m for m in outcome.transcript if m["role"] == "tool"]
    return tool_messages[turn]["results"]


async def test_shipped_replies_run_offline_with_no_flags(workflow) -> None:
    task = workflow.find("research")
    async with ProviderPool(workflow) as pool:
        outcome = await run_task(task, workflow, {"topic": "prefect"}, provider=pool.for_task(task))
    assert outcome.outputs == {"summary": "added and counted", "total": 5}
    assert outcome.delta == {
        "summary": "added and counted",
        "total": 5,
        "research": {"summary": "added and counted", "total": 5},
        "prepared": True,
        "reviewed_total": 50,
    }
    assert (outcome.model_calls, outcome.tool_calls) == (2, 2)
    assert [r["content"] for r in results_of(outcome)] == ["5", "3"]
    assert [entry["name"] for entry in outcome.tool_log] == ["add", "word_count"]
    assert "## Reference tools" in outcome.prompt and "browser" in outcome.prompt
    assert outcome.prompt.startswith("Research the topic")


async def test_multi_turn_with_context_shell_and_pre_run_hook(workflow) -> None:
    replies = [
        calls(("whereami", {})),
        calls(("shout", {"text": "hello tools"})),
        {"output": {"summary": "done", "total": 2}},
    ]
    outcome = await research(workflow, replies, {"topic": "prefect"})
    assert json.loads(results_of(outcome, 0)[0]["content"]) == {
        "topic": "prefect",
        "folder": "10_research",
        "prepared": True,
    }
    assert results_of(outcome, 1)[0]["content"].strip() == "HELLO TOOLS"
    assert outcome.model_calls == 3 and outcome.tool_calls == 2


async def test_parallel_tool_calls_run_concurrently(workflow) -> None:
    replies = [
        calls(*(("nap", {"seconds": 0.4}) for _ in range(4))),
        {"output": {"summary": "rested", "total": 4}},
    ]
    started = time.perf_counter()
    outcome = await research(workflow, replies)
    assert time.perf_counter() - started < 1.2
    assert [r["content"] for r in results_of(outcome)] == ["rested 0.4"] * 4


async def test_unknown_tool_and_bad_arguments_are_reported_to_the_model(workflow) -> None:
    replies = [
        calls(("teleport", {}), ("add", {"a": "one", "b": 2}), ("add", {"a": 1})),
        {"output": {"summary": "recovered", "total": 0}},
    ]
    outcome = await research(workflow, replies)
    unknown, wrong_type, missing = results_of(outcome)
    assert unknown["is_error"] and "teleport" in unknown["content"]
    assert wrong_type["is_error"] and "a" in wrong_type["content"]
    assert missing["is_error"] and "b" in missing["content"]
    assert outcome.outputs["summary"] == "recovered"


async def test_a_tool_exception_is_retried_then_surfaced(workflow) -> None:
    replies = [calls(("database", {"query": "select 1"})), {"output": {"summary": "s", "total": 1}}]
    outcome = await research(workflow, replies)
    (result,) = results_of(outcome)
    assert result["is_error"] and "database is down" in result["content"]
    assert outcome.tool_log[0]["attempts"] == 2  # tool_retries: 1 in the task's settings


async def test_bad_json_is_repaired(workflow) -> None:
    replies = [
        '```json\n{"summary": "oops", "total": \n```',
        {"output": {"summary": "fixed", "total": "7"}},
    ]
    outcome = await research(workflow, replies)
    assert outcome.outputs == {"summary": "fixed", "total": 7}
    repair = [m for m in outcome.transcript if m["role"] == "user"][1]
    assert "not valid JSON" in repair["content"] and "total (int)" in repair["content"]


async def test_max_turns_fails_the_task(workflow) -> None:
    with pytest.raises(MaxTurnsExceeded) as info:
        await research(workflow, [calls(("add", {"a": 1, "b": 1}))])
    assert info.value.stats["model_calls"] == 6  # settings.max_turns: 6


async def test_echo_shows_everything_the_agent_was_sent(workflow) -> None:
    replies = [calls(("add", {"a": 20, "b": 22})), {"echo": True}]
    task = workflow.find("research")
    provider = ScriptedProvider({"tasks": {"research": replies}})
    with pytest.raises(OutputValidationError) as info:  # an echo is no JSON answer
        await run_task(task, workflow, {"topic": "owls"}, provider=provider)
    echo = info.value.attempts[0]["text"]
    assert len(info.value.attempts) == 3  # the first answer and two repairs (output_retries)
    for part in (
        "Research the topic",
        "summary (str)",
        "## Reference tools",
        '"topic": "owls"',
        '"task_dir": "subtasks/10_research"',
        '"prepared": true',
        'add {"a": 20, "b": 22}',
        "42",
    ):
        assert part in echo


@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "timeout", "auth", "bad_request"])
async def test_every_error_class_via_a_replies_file(
    workflow, workflow_dir: Path, tmp_path: Path, kind: str
) -> None:
    replies = tmp_path / "errors.yaml"
    replies.write_text(f"tasks:\n  research:\n    - error: {kind}\n")
    task = workflow.find("research")
    pool = ProviderPool(workflow, ProviderOverride("scripted", replies))
    with pytest.raises(ProviderError) as info:
        await run_task(task, workflow, {}, provider=pool.for_task(task))
    assert info.value.kind == kind and info.value.provider == "scripted"
    assert info.value.retryable is (kind in ("rate_limit", "server_error", "timeout"))


async def test_scoped_input_and_missing_required_key(workflow_dir: Path) -> None:
    task_yaml = workflow_dir / "subtasks" / "10_research" / "task.yaml"
    task_yaml.write_text(
        task_yaml.read_text() + "input:\n  required: [topic]\n  optional: [depth]\n"
    )
    workflow = load_workflow(workflow_dir)
    answer = {"output": {"summary": "s", "total": 1}}
    outcome = await research(workflow, [answer], {"topic": "owls", "depth": 2, "secret": "hidden"})
    sent = json.loads(outcome.transcript[0]["content"])
    assert set(sent) == {"topic", "depth", "_env"}
    with pytest.raises(MissingInputError, match="'topic'"):
        await research(workflow, [answer], {"depth": 2})


async def test_phases_run_the_right_hooks(workflow) -> None:
    answer = {"output": {"summary": "s", "total": 3}}
    first = await research(workflow, [answer], phase="first")
    assert first.delta["prepared"] is True and "reviewed_total" not in first.delta
    final = await research(workflow, [answer], phase="final")
    assert "prepared" not in final.delta and final.delta["reviewed_total"] == 30


async def test_post_run_sees_the_output_and_may_change_it(workflow_dir: Path) -> None:
    hook = workflow_dir / "subtasks" / "10_research" / "hooks" / "post_run.py"
    hook.write_text(
        "def run(ctx, task):\n"
        "    assert ctx.context['research']['total'] == 4\n"
        "    ctx.context['total'] = ctx.context['total'] + 1\n"
        "    ctx.context.pop('prepared')\n"
    )
    workflow = load_workflow(workflow_dir)
    outcome = await research(workflow, [{"output": {"summary": "s", "total": 4}}], {"keep": 1})
    assert outcome.delta == {
        "summary": "s",
        "total": 5,
        "research": {"summary": "s", "total": 4},
    }


async def test_a_task_without_instructions_only_runs_its_hooks(tmp_path: Path) -> None:
    from builders import make_task, workflow_around

    hooks = tmp_path / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre_run.sh").write_text('echo \'{"from_shell": "yes"}\'\n')
    task = make_task(
        "branch", folder=tmp_path, instructions=None, hooks={"pre_run": hooks / "pre_run.sh"}
    )
    outcome = await run_task(task, workflow_around(task, tmp_path), {"a": 1}, provider=None)
    assert outcome.delta == {"from_shell": "yes"}
    assert outcome.model_calls == 0
