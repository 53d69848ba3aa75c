"""The conversation loop itself, driven by the scripted provider and a small in-test dispatcher.

End-to-end tests with real tools are in test_agent_runtime.py; these pin the loop's bookkeeping.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from builders import make_task

from prefect_folpipe.agent.loop import AgentPass, converse
from prefect_folpipe.errors import (
    BudgetExceeded,
    MaxTurnsExceeded,
    OutputValidationError,
    ProviderError,
)
from prefect_folpipe.providers import ToolCall, ToolDefinition, ToolResult, Usage
from prefect_folpipe.providers.scripted import ScriptedProvider


class SleepyTools:
    """Each call sleeps ``delay`` seconds, then answers with its arguments."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls: list[str] = []

    def definitions(self) -> list[ToolDefinition]:
        return [ToolDefinition("nap", "sleep a bit", {"type": "object", "properties": {}})]

    async def call(self, call: ToolCall) -> ToolResult:
        self.calls.append(call.name)
        await asyncio.sleep(self.delay)
        if call.name == "explode":
            raise RuntimeError("kaboom")
        return ToolResult(call.id, call.name, f"{call.name}:{dict(call.arguments)}")


def agent(tmp_path: Path, replies: dict, *, tools=None, config=None, settings=None, **kw):
    task = make_task("t", folder=tmp_path, config=config, settings=settings)
    return AgentPass(
        task=task,
        provider=ScriptedProvider(replies),
        system="SYS",
        user_message="{}",
        tools=tools,
        output_types=task.config.output_types,
        **kw,
    )


async def test_multi_turn_tool_use_counts_calls_and_usage(tmp_path: Path) -> None:
    tools = SleepyTools()
    replies = {
        "default": [
            {"tool_calls": [{"name": "nap", "arguments": {"n": 1}}]},
            {"tool_calls": [{"name": "nap", "arguments": {"n": 2}}]},
            "done",
        ]
    }
    convo = await converse(agent(tmp_path, replies, tools=tools))
    assert convo.text == "done"
    assert (convo.model_calls, convo.tool_calls) == (3, 2)
    assert convo.usage.input_tokens > 0 and convo.usage.output_tokens > 0
    roles = [m["role"] for m in convo.transcript]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert convo.transcript[2]["results"][0]["content"] == "nap:{'n': 1}"


async def test_calls_of_one_turn_run_concurrently_and_answer_in_order(tmp_path: Path) -> None:
    tools = SleepyTools(delay=0.3)
    calls = [{"name": "nap", "arguments": {"i": i}} for i in range(5)]
    replies = {"default": [{"tool_calls": calls}, "done"]}
    started = time.perf_counter()
    convo = await converse(agent(tmp_path, replies, tools=tools))
    assert time.perf_counter() - started < 1.0
    results = convo.transcript[2]["results"]
    call_ids = [c["id"] for c in convo.transcript[1]["tool_calls"]]
    assert [r["call_id"] for r in results] == call_ids
    assert [r["content"] for r in results] == [f"nap:{{'i': {i}}}" for i in range(5)]


async def test_a_raising_dispatcher_still_answers_every_call(tmp_path: Path) -> None:
    calls = [{"name": "explode"}, {"name": "nap"}]
    convo = await converse(
        agent(tmp_path, {"default": [{"tool_calls": calls}, "ok"]}, tools=SleepyTools())
    )
    first, second = convo.transcript[2]["results"]
    assert first["is_error"] and "kaboom" in first["content"]
    assert not second["is_error"]


async def test_max_turns_exceeded(tmp_path: Path) -> None:
    replies = {"default": {"tool_calls": [{"name": "nap"}]}}
    with pytest.raises(MaxTurnsExceeded) as info:
        await converse(agent(tmp_path, replies, tools=SleepyTools(), settings={"max_turns": 3}))
    assert "3 turn" in str(info.value)
    assert info.value.stats["model_calls"] == 3
    assert info.value.stats["tool_calls"] == 2
    assert not info.value.retryable


async def test_repair_then_success(tmp_path: Path) -> None:
    replies = {"default": ["no json here", {"output": {"score": "7"}}]}
    convo = await converse(agent(tmp_path, replies, config={"output": {"score": "int"}}))
    assert convo.outputs == {"score": 7}
    assert convo.model_calls == 2
    repair = convo.transcript[2]
    assert repair["role"] == "user" and "no ```json code block" in repair["content"]


async def test_output_failure_keeps_every_attempt(tmp_path: Path) -> None:
    replies = {"default": ["first", "second", {"output": {"score": "high"}}]}
    with pytest.raises(OutputValidationError) as info:
        await converse(
            agent(
                tmp_path,
                replies,
                config={"output": {"score": "int"}},
                settings={"output_retries": 2},
            )
        )
    attempts = info.value.attempts
    assert [a["text"] for a in attempts][:2] == ["first", "second"]
    assert len(attempts) == 3
    message = str(info.value)
    assert "attempt 1" in message and "attempt 3" in message and "expected int" in message
    assert not info.value.retryable


async def test_provider_errors_propagate_with_stats(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        await converse(agent(tmp_path, {"default": {"error": "server_error"}}))
    assert info.value.retryable and info.value.stats["model_calls"] == 1  # the failed call


class Ledger:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0
        self.events: list[str] = []

    def before_call(self, task) -> None:
        self.events.append(f"check:{task.path}")
        if self.spent >= self.limit:
            raise BudgetExceeded("over budget")

    async def after_call(self, task, usage: Usage, *, model: str | None = None) -> float:
        self.events.append(f"charge:{model}")
        self.spent += usage.total_tokens
        return 0.5


async def test_ledger_is_checked_before_and_charged_after_each_call(tmp_path: Path) -> None:
    ledger = Ledger(limit=10**6)
    replies = {"default": [{"tool_calls": [{"name": "nap"}]}, "done"]}
    convo = await converse(agent(tmp_path, replies, tools=SleepyTools(), ledger=ledger))
    assert ledger.events == ["check:t", "charge:scripted", "check:t", "charge:scripted"]
    assert ledger.spent == convo.usage.total_tokens
    assert convo.cost == 1.0
    with pytest.raises(BudgetExceeded):
        await converse(agent(tmp_path, {"default": "x"}, ledger=Ledger(limit=0)))


async def test_the_real_budget_ledger_plugs_in(tmp_path: Path) -> None:
    from builders import workflow_around

    from prefect_folpipe.agent.budget import BudgetLedger

    task = make_task("t", folder=tmp_path, settings={"token_budget": 10**6})
    ledger = BudgetLedger(workflow_around(task, tmp_path))
    pass_ = AgentPass(
        task=task,
        provider=ScriptedProvider({"default": "done"}),
        system="SYS",
        user_message="{}",
        ledger=ledger,
    )
    convo = await converse(pass_)
    assert ledger.task_totals("t").total_tokens == convo.usage.total_tokens > 0


async def test_agent_errors_pickle_with_their_attempts_and_stats(tmp_path: Path) -> None:
    import pickle

    with pytest.raises(OutputValidationError) as info:
        await converse(agent(tmp_path, {"default": "no json"}, config={"output": ["a"]}))
    copy = pickle.loads(pickle.dumps(info.value))
    assert copy.attempts == info.value.attempts and len(copy.attempts) == 3
    assert copy.stats == info.value.stats and str(copy) == str(info.value)
    assert copy.code == "FP312"
