"""The model-call journal of one agent pass (``agent.journal``), with an in-memory store.

Prefect runs, retries, resumes after SIGKILL and real storage are in
tests/compile/test_journal.py and tests/providers/test_journal_resume.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from builders import make_task, make_tool

from prefect_folpipe.agent.budget import BudgetLedger
from prefect_folpipe.agent.journal import Journal
from prefect_folpipe.agent.loop import AgentPass, converse
from prefect_folpipe.providers import (
    AssistantMessage,
    ModelRequest,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from prefect_folpipe.providers.scripted import ScriptedProvider
from prefect_folpipe.workflow import Workflow


class MemoryStore:
    """A journal store in a dict; counts reads and writes, can be made to fail."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.reads = 0
        self.writes = 0
        self.broken = False

    async def read(self, key: str) -> bytes | None:
        self.reads += 1
        if self.broken:
            raise OSError("storage unreachable")
        return self.data.get(key)

    async def write(self, key: str, data: bytes) -> None:
        self.writes += 1
        if self.broken:
            raise OSError("storage unreachable")
        self.data[key] = data


class CountingTools:
    """Tools ``look`` (replay-safe in the tests that say so) and ``act``; counts real runs."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.from_journal: list[str] = []

    def definitions(self) -> list[ToolDefinition]:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        return [ToolDefinition("look", "read", schema), ToolDefinition("act", "write", schema)]

    async def call(self, call: ToolCall) -> ToolResult:
        self.ran.append(f"{call.name}{call.arguments.get('n')}")
        return ToolResult(call.id, call.name, f"{call.name} result {call.arguments.get('n')}")

    def replayed(self, call: ToolCall, result: ToolResult) -> None:
        self.from_journal.append(f"{call.name}{call.arguments.get('n')}")


def _replies(turns: int) -> dict[str, Any]:
    entries: list[Any] = [
        {
            "tool_calls": [
                {"name": "look", "arguments": {"n": i}},
                {"name": "act", "arguments": {"n": i}},
            ]
        }
        for i in range(turns - 1)
    ]
    entries.append({"echo": True})
    return {"default": entries}


def _pass(
    tmp_path: Path,
    store: MemoryStore,
    *,
    replies: dict[str, Any] | None = None,
    tools: Any = None,
    system: str = "SYS",
    safe: bool = False,
    ledger: Any = None,
    journal: Journal | None = None,
) -> AgentPass:
    specs = [make_tool("look"), make_tool("act")]
    if safe:
        specs[0] = replace(specs[0], metadata={"type": "python", "replay": "safe"})
    task = make_task("t", folder=tmp_path, tools=specs)
    return AgentPass(
        task=task,
        provider=ScriptedProvider(replies or _replies(4)),
        system=system,
        user_message='{"topic": "x"}',
        tools=tools or CountingTools(),
        ledger=ledger,
        journal=journal or Journal(store, task.path, "t|single|[]", workflow_root=tmp_path),
    )


async def test_a_second_pass_replays_every_answer_and_pays_nothing(tmp_path: Path) -> None:
    store = MemoryStore()
    first = await converse(_pass(tmp_path, store))
    assert (first.model_calls, first.replayed_calls) == (4, 0)
    assert len(store.data) == 4  # one small entry per answer
    second = await converse(_pass(tmp_path, store))
    assert (second.model_calls, second.replayed_calls) == (0, 4)
    assert second.text == first.text  # the echo shows the whole conversation: identical
    assert second.replayed_usage == first.usage
    assert second.usage.total_tokens == 0


async def test_the_first_call_that_differs_and_every_later_one_go_live(tmp_path: Path) -> None:
    store = MemoryStore()
    await converse(_pass(tmp_path, store))
    tools = CountingTools()

    async def changed(call: ToolCall) -> ToolResult:  # turn 2's tool answers differently now
        n = call.arguments.get("n")
        return ToolResult(
            call.id, call.name, f"{call.name} NEW {n}" if n == 1 else f"{call.name} result {n}"
        )

    tools.call = changed  # type: ignore[method-assign]
    again = await converse(_pass(tmp_path, store, tools=tools))
    # calls 1 and 2 were answered from the journal; call 3 saw a new tool result: live, and
    # call 4 stays live although nothing else differs
    assert (again.replayed_calls, again.model_calls) == (2, 2)


async def test_an_edited_prompt_replays_nothing(tmp_path: Path) -> None:
    store = MemoryStore()
    await converse(_pass(tmp_path, store))
    edited = await converse(_pass(tmp_path, store, system="SYS, edited"))
    assert (edited.replayed_calls, edited.model_calls) == (0, 4)
    assert store.reads == 2  # one miss per pass: after it, the journal is not even read


async def test_side_effect_tools_run_again_and_safe_tools_are_answered_from_the_journal(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    first_tools = CountingTools()
    await converse(_pass(tmp_path, store, tools=first_tools, safe=True))
    assert first_tools.ran == ["look0", "act0", "look1", "act1", "look2", "act2"]
    tools = CountingTools()
    again = await converse(_pass(tmp_path, store, tools=tools, safe=True))
    assert again.replayed_calls == 4
    assert tools.ran == ["act0", "act1", "act2"]  # no `replay: safe`: its effects happen again
    assert tools.from_journal == ["look0", "look1", "look2"]


async def test_without_replay_safe_every_tool_runs_again(tmp_path: Path) -> None:
    store = MemoryStore()
    await converse(_pass(tmp_path, store))
    tools = CountingTools()
    await converse(_pass(tmp_path, store, tools=tools))
    assert tools.ran == ["look0", "act0", "look1", "act1", "look2", "act2"]
    assert tools.from_journal == []


async def test_replayed_calls_are_free_and_outside_the_budget(tmp_path: Path) -> None:
    store = MemoryStore()
    await converse(_pass(tmp_path, store))
    task = make_task("t", folder=tmp_path, config={"settings": {"token_budget": 10}})
    workflow = Workflow(root=task, root_dir=tmp_path, name="w")
    ledger = BudgetLedger(workflow)
    again = await converse(_pass(tmp_path, store, ledger=ledger))
    assert again.replayed_calls == 4  # a 10-token budget: any paid call would be refused
    totals = ledger.task_totals("t")
    assert (totals.model_calls, totals.total_tokens, totals.cost_usd) == (0, 0, 0.0)
    assert (
        totals.replayed_calls == 4 and totals.replayed_tokens == again.replayed_usage.total_tokens
    )
    assert ledger.model_report()["scripted"]["replayed_calls"] == 4


async def test_an_unreachable_or_corrupt_journal_only_costs_the_replay(tmp_path: Path) -> None:
    store = MemoryStore()
    await converse(_pass(tmp_path, store))
    for key in store.data:
        store.data[key] = b"{not json"
    corrupt = await converse(_pass(tmp_path, store))
    assert (corrupt.replayed_calls, corrupt.model_calls) == (0, 4)
    store.broken = True
    broken = await converse(_pass(tmp_path, store))
    assert (broken.replayed_calls, broken.model_calls) == (0, 4)


async def test_a_fresh_run_replays_only_its_own_entries(tmp_path: Path) -> None:
    store = MemoryStore()
    old = Journal(store, "t", "ns", workflow_root=tmp_path, run="run-1")
    await converse(_pass(tmp_path, store, journal=old))
    fresh = Journal(store, "t", "ns", workflow_root=tmp_path, run="run-2", only_run=True)
    first = await converse(_pass(tmp_path, store, journal=fresh))
    assert first.replayed_calls == 0
    retry = Journal(store, "t", "ns", workflow_root=tmp_path, run="run-2", only_run=True)
    assert (await converse(_pass(tmp_path, store, journal=retry))).replayed_calls == 4


def _request(**changes: Any) -> ModelRequest:
    request = ModelRequest(
        system="You help.",
        messages=(UserMessage("hello"),),
        tools=(ToolDefinition("look", "read", {"type": "object"}),),
        model="m-1",
        temperature=0.2,
        max_tokens=100,
        output_schema={"type": "object"},
        task_path="a/b",
        task_name="b",
        iteration=2,
        options={"top_p": 0.9, "timeout": 30, "base_url": "http://x", "api_key": "k"},
    )
    return replace(request, **changes)


@pytest.mark.parametrize(
    "change",
    [
        {"model": "m-2"},
        {"system": "You help a lot."},
        {"messages": (UserMessage("hello!"),)},
        {"tools": ()},
        {"temperature": 0.3},
        {"max_tokens": 101},
        {"output_schema": {"type": "array"}},
        {"options": {"top_p": 0.5}},
    ],
)
def test_what_changes_the_answer_changes_the_fingerprint(change: dict[str, Any]) -> None:
    journal = Journal(MemoryStore(), "a/b")
    assert journal.fingerprint(_request(**change), "p") != journal.fingerprint(_request(), "p")


def test_provider_counts_and_volatile_fields_do_not(tmp_path: Path) -> None:
    journal = Journal(MemoryStore(), "a/b")
    base = journal.fingerprint(_request(), "anthropic")
    assert journal.fingerprint(_request(), "openai") != base
    volatile = _request(
        task_path="elsewhere",
        task_name="other",
        iteration=7,
        options={"top_p": 0.9, "timeout": 5, "base_url": "http://proxy", "api_key": "other"},
    )
    assert journal.fingerprint(volatile, "anthropic") == base


def test_secrets_and_the_workflow_folder_are_masked_before_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "tok-123456789")
    root = tmp_path.resolve()
    here = Journal(MemoryStore(), "t", workflow_root=root / "a")
    there = Journal(MemoryStore(), "t", workflow_root=root / "b")
    leaked = _request(messages=(UserMessage(f"key tok-123456789 in {root / 'a'}/x"),))
    masked = _request(messages=(UserMessage(f"key [REDACTED] in {root / 'b'}/x"),))
    assert here.fingerprint(leaked, "p") == there.fingerprint(masked, "p")


async def test_entries_hold_answers_with_secrets_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_KEY", "sk-secret-value-123")
    store = MemoryStore()
    replies = {"default": ["the key is sk-secret-value-123"]}
    await converse(_pass(tmp_path, store, replies=replies))
    (entry,) = store.data.values()
    assert b"sk-secret-value-123" not in entry
    assert json.loads(entry)["response"]["text"] == "the key is [REDACTED]"


def test_each_message_is_hashed_once_per_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_folpipe.agent import journal as module

    journal = Journal(MemoryStore(), "t")
    seen: list[str] = []
    original = module.message_to_dict
    monkeypatch.setattr(module, "message_to_dict", lambda m: seen.append(m.role) or original(m))
    messages: tuple[Any, ...] = (UserMessage("start"),)
    for turn in range(50):
        call = ToolCall(f"c{turn}", "look", {"n": turn})
        journal.fingerprint(_request(messages=messages), "p")
        messages = (
            *messages,
            AssistantMessage("", (call,)),
            ToolResultsMessage((ToolResult(call.id, "look", "x" * 100),)),
        )
    assert len(seen) == len(messages) - 2  # linear in the conversation, not quadratic


async def test_a_replayed_pass_uses_up_its_replies_so_the_next_pass_gets_the_next_one(
    tmp_path: Path,
) -> None:
    # a loop's first iteration was answered, then the process died; the resumed process
    # replays that pass and its second iteration must get the second reply, as the
    # uninterrupted run's did (it got the first one again, and the loop ran an extra round)
    store, replies = MemoryStore(), {"default": ["first draft", "second draft"]}
    assert (await converse(_pass(tmp_path, store, replies=replies))).text == "first draft"
    resumed = ScriptedProvider(replies)  # a new process: new cursors
    replayed = await converse(replace(_pass(tmp_path, store), provider=resumed))
    assert (replayed.replayed_calls, replayed.text) == (1, "first draft")
    iteration_2 = Journal(store, "t", "t|iteration 2|[]", workflow_root=tmp_path)
    live = await converse(replace(_pass(tmp_path, store, journal=iteration_2), provider=resumed))
    assert (live.model_calls, live.text) == (1, "second draft")
