"""run_task without tools: input scoping, _env, outputs and delta, phases, errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from builders import make_task, scripted_provider, workflow_around

from prefect_folpipe.agent import TaskOutcome, run_task
from prefect_folpipe.errors import ConfigError, MissingInputError, ProviderError
from prefect_folpipe.providers.registry import NO_PROVIDER_MESSAGE, ProviderPool
from prefect_folpipe.providers.scripted import ScriptedProvider

ECHO = {"default": {"echo": True}}


def sent_input(outcome: TaskOutcome) -> dict:
    """The JSON of the first user message the agent was sent."""
    return json.loads(outcome.transcript[0]["content"])


async def run(task, tmp_path: Path, context, replies=ECHO, **kwargs) -> TaskOutcome:
    workflow = workflow_around(task, tmp_path)
    return await run_task(task, workflow, context, provider=ScriptedProvider(replies), **kwargs)


async def test_echo_shows_prompt_and_full_context_with_env(tmp_path: Path) -> None:
    task = make_task("a", folder=tmp_path / "sub" / "a", instructions="Summarise.", rel_dir="sub/a")
    outcome = await run(task, tmp_path, {"topic": "prefect", "n": 2})
    assert sent_input(outcome) == {
        "topic": "prefect",
        "n": 2,
        "_env": {"cwd": str(tmp_path.absolute()), "task_dir": "sub/a"},
    }
    assert outcome.text.startswith("[system]\nSummarise.")
    assert '"topic": "prefect"' in outcome.text
    assert outcome.prompt == "Summarise."
    assert outcome.delta == {"a": outcome.text}
    assert outcome.model_calls == 1 and outcome.tool_calls == 0
    assert outcome.provider == "scripted" and outcome.model == "scripted"


async def test_scoped_input_shows_only_declared_keys(tmp_path: Path) -> None:
    task = make_task(
        "t",
        folder=tmp_path,
        config={"input": {"required": ["cv"], "optional": ["notes", "absent"]}},
    )
    outcome = await run(task, tmp_path, {"cv": "text", "notes": "n", "secret": "s"})
    assert set(sent_input(outcome)) == {"cv", "notes", "_env"}


async def test_missing_required_input_names_the_key(tmp_path: Path) -> None:
    task = make_task("t", folder=tmp_path, config={"input": {"required": ["cv", "job"]}})
    with pytest.raises(MissingInputError) as info:
        await run(task, tmp_path, {"cv": "text"})
    assert "'job'" in str(info.value) and "'cv'" not in str(info.value)
    assert info.value.code == "FP313" and not info.value.retryable


async def test_declared_outputs_go_top_level_and_under_the_task_name(tmp_path: Path) -> None:
    task = make_task(
        "review", folder=tmp_path, config={"output": {"approved": "bool", "score": "int"}}
    )
    replies = {"default": {"output": {"approved": "yes", "score": "4", "extra": 1}}}
    context = {"cv": {"text": "x"}, "approved": False}
    snapshot = copy.deepcopy(context)
    outcome = await run(task, tmp_path, context, replies)
    assert outcome.outputs == {"approved": True, "score": 4}
    assert outcome.delta == {
        "approved": True,
        "score": 4,
        "review": {"approved": True, "score": 4},
    }
    assert context == snapshot


async def test_an_unchanged_output_value_is_still_in_the_delta(tmp_path: Path) -> None:
    task = make_task("loop_step", folder=tmp_path, config={"output": ["approved"]})
    replies = {"default": {"output": {"approved": False}}}
    outcome = await run(task, tmp_path, {"approved": False}, replies)
    assert outcome.delta["approved"] is False


async def test_final_phase_sees_children_outputs_through_scoping(tmp_path: Path) -> None:
    child = make_task("fetch", folder=tmp_path / "c", config={"output": ["rows"]})
    parent = make_task(
        "report", folder=tmp_path, config={"input": {"required": ["q"]}}, children=(child,)
    )
    context = {"q": 1, "rows": [1, 2], "fetch": {"rows": [1, 2]}, "other": 0}
    final = await run(parent, tmp_path, context, phase="final")
    assert set(sent_input(final)) == {"q", "rows", "fetch", "_env"}
    first = await run(parent, tmp_path, context, phase="first")
    assert set(sent_input(first)) == {"q", "_env"}


async def test_task_without_instructions_makes_no_model_call(tmp_path: Path) -> None:
    task = make_task("branch", folder=tmp_path, instructions=None)
    outcome = await run_task(task, workflow_around(task, tmp_path), {"a": 1}, provider=None)
    assert outcome.delta == {} and outcome.model_calls == 0


async def test_agent_task_without_provider_is_the_no_provider_error(tmp_path: Path) -> None:
    task = make_task("t", folder=tmp_path)
    with pytest.raises(ConfigError, match="No LLM provider configured"):
        await run_task(task, workflow_around(task, tmp_path), {}, provider=None)
    with pytest.raises(ConfigError) as info:
        ProviderPool(workflow_around(task, tmp_path)).for_task(task)
    assert str(info.value) == NO_PROVIDER_MESSAGE


@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "timeout", "auth", "bad_request"])
async def test_provider_errors_fail_the_task_with_their_class(tmp_path: Path, kind: str) -> None:
    (tmp_path / "replies.yaml").write_text(f"tasks: {{t: [{{error: {kind}}}, fine]}}\n")
    task = make_task("t", folder=tmp_path / "t", provider=scripted_provider())
    pool = ProviderPool(workflow_around(task, tmp_path))
    provider = pool.for_task(task)
    with pytest.raises(ProviderError) as info:
        await run_task(task, pool.workflow, {}, provider=provider)
    assert info.value.kind == kind
    assert info.value.retryable is (kind in {"rate_limit", "server_error", "timeout"})
    retried = await run_task(task, pool.workflow, {}, provider=provider)
    assert retried.text == "fine"


async def test_iteration_and_model_settings_reach_the_request(tmp_path: Path) -> None:
    seen = []

    class Spy(ScriptedProvider):
        async def complete(self, request):
            seen.append(request)
            return await super().complete(request)

    task = make_task(
        "t",
        folder=tmp_path,
        config={"output": {"n": "int"}},
        provider=scripted_provider(model="m-1", temperature=0.2, max_tokens=50),
    )
    spy = Spy({"default": {"output": {"n": 1}}})
    await run_task(task, workflow_around(task, tmp_path), {}, provider=spy, iteration=3)
    request = seen[0]
    assert (request.iteration, request.model, request.temperature, request.max_tokens) == (
        3,
        "m-1",
        0.2,
        50,
    )
    assert request.output_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    assert request.task_path == "t" and request.task_name == "t"


def test_bad_phase_is_rejected(tmp_path: Path) -> None:
    import asyncio

    task = make_task("t", folder=tmp_path)
    with pytest.raises(ValueError, match="phase"):
        asyncio.run(run_task(task, workflow_around(task, tmp_path), {}, provider=None, phase="x"))
