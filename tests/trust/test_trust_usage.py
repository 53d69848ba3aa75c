"""Issue 11 point 5: ``model_calls`` counts every attempt, failed ones included; tokens are only
what the provider reported. The budget ledger is the one usage ledger the report reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import make_task, scripted_provider, workflow_around
from providers.wire import Failure, OpenAIWire, Reply
from pytest_httpserver import HTTPServer

from prefect_folpipe.agent.budget import BudgetLedger
from prefect_folpipe.agent.loop import AgentPass, converse
from prefect_folpipe.errors import ConfigError, ProviderError
from prefect_folpipe.providers.scripted import ScriptedProvider


async def test_a_failed_call_is_counted_by_the_ledger_without_tokens() -> None:
    task = make_task("flaky", provider=scripted_provider())
    workflow = workflow_around(make_task("root", "", children=[task]))
    ledger = BudgetLedger(workflow)
    provider = ScriptedProvider({"tasks": {"flaky": [{"error": "server_error"}, "fine"]}})
    agent = AgentPass(task=task, provider=provider, system="s", user_message="u", ledger=ledger)
    with pytest.raises(ProviderError) as caught:
        await converse(agent)
    assert caught.value.stats["model_calls"] == 1  # type: ignore[attr-defined]
    totals = ledger.task_totals("flaky")
    assert (totals.model_calls, totals.total_tokens) == (1, 0)
    await converse(agent)
    totals = ledger.task_totals("flaky")
    assert totals.model_calls == 2
    assert totals.total_tokens > 0
    assert ledger.run_totals().model_calls == 2


class _NoApiKey(ScriptedProvider):
    async def complete(self, request):  # type: ignore[no-untyped-def]
        raise ConfigError("no API key", code="FP322")


async def test_a_call_refused_by_its_own_config_is_not_a_model_call() -> None:
    """FP321 / FP322 / FP326 are raised before anything is sent: nothing to count."""
    task = make_task("keyless", provider=scripted_provider())
    ledger = BudgetLedger(workflow_around(make_task("root", "", children=[task])))
    provider = _NoApiKey({"default": "never"})
    agent = AgentPass(task=task, provider=provider, system="s", user_message="u", ledger=ledger)
    with pytest.raises(ConfigError):
        await converse(agent)
    assert ledger.task_totals("keyless").model_calls == 0
    assert ledger.run_totals().model_calls == 0


@pytest.mark.prefect
def test_retried_and_failed_attempts_are_reported(make_workflow, run) -> None:
    wf = make_workflow(
        {
            "task.yaml": {"settings": {"retry_delay_seconds": 0}},
            "subtasks/flaky/instructions.md": "Go.",
            "subtasks/flaky/task.yaml": {"settings": {"max_retries": 2}},
            "subtasks/steady/instructions.md": "Go.",
            "subtasks/denied/instructions.md": "Go.",
            "subtasks/denied/task.yaml": {"on_failure": "skip"},
            "replies.yaml": {
                "tasks": {
                    "flaky": [{"error": "rate_limit"}, {"error": "server_error"}, "done"],
                    "steady": ["done"],
                    "denied": [{"error": "auth"}],
                }
            },
        }
    )
    result = run(wf)
    flaky, steady, denied = (result.task(p) for p in ("flaky", "steady", "denied"))
    assert flaky["status"] == "completed"
    assert flaky["attempts"] == 3
    assert flaky["model_calls"] == 3
    # only the answered call has tokens: one call's worth, like steady's (the two prompts
    # differ by the task's name, so their estimated input tokens may differ by one)
    assert flaky["usage"]["output_tokens"] == steady["usage"]["output_tokens"]
    assert abs(flaky["usage"]["input_tokens"] - steady["usage"]["input_tokens"]) <= 2
    assert denied["model_calls"] == 1
    assert denied["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert result.usage["model_calls"] == 5


@pytest.fixture
def openai_wire() -> Iterator[OpenAIWire]:
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield OpenAIWire(server)
    finally:
        server.clear()
        server.stop()


@pytest.mark.prefect
def test_real_sdk_errors_count_as_model_calls(
    make_workflow, run, openai_wire: OpenAIWire, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOLPIPE_TEST_KEY", "sk-test-usage-0123456789")
    openai_wire.add(
        Failure(500, "overloaded"), Failure(429, "slow down"), Reply("ok", usage=(10, 5, 0, 0))
    )
    wf: Path = make_workflow(
        {
            "task.yaml": {
                "providers": {
                    "default": "gpt",
                    "gpt": {
                        "type": "openai",
                        "model": "gpt-test",
                        "base_url": openai_wire.base_url,
                        "api_key_env": "FOLPIPE_TEST_KEY",
                    },
                },
                "settings": {"max_retries": 2, "retry_delay_seconds": 0},
            },
            "subtasks/ask/instructions.md": "Say ok.",
        }
    )
    result = run(wf)
    assert result.status == "completed", (result.error, openai_wire.requests, result.tasks)
    root = result.task("ask")
    assert len(openai_wire.requests) == 3
    assert root["model_calls"] == 3
    assert root["usage"] == {"input_tokens": 10, "output_tokens": 5}
