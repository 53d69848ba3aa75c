"""Record a real SDK conversation into a cassette, then replay it offline."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from prefect_folpipe.errors import ConfigError, ProviderError
from prefect_folpipe.providers import (
    AssistantMessage,
    ModelRequest,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from prefect_folpipe.providers.classes import ProviderEnv
from prefect_folpipe.providers.registry import ProviderPool
from prefect_folpipe.providers.replay import CassetteRecorder, ReplayProvider
from prefect_folpipe.workflow.config import ProviderConfig, TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, ResolvedProvider, Task, Workflow

from .conftest import API_KEY, KEY_ENV, make_provider, make_wire
from .wire import Failure, Reply

TOOL = ToolDefinition("lookup", "Look up.", {"type": "object", "properties": {}})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)


def conversation(root: Path) -> list[ModelRequest]:
    """A two-turn tool conversation of task ``fetch`` whose prompt mentions the workflow dir."""
    first = ModelRequest(
        system=f"Work in {root}/data.",
        messages=(UserMessage("find it"),),
        tools=(TOOL,),
        task_path="fetch",
    )
    return [first]


def follow_up(first: ModelRequest, response) -> ModelRequest:  # type: ignore[no-untyped-def]
    call = response.tool_calls[0]
    return ModelRequest(
        system=first.system,
        tools=first.tools,
        task_path=first.task_path,
        messages=(
            *first.messages,
            AssistantMessage(tool_calls=response.tool_calls),
            ToolResultsMessage((ToolResult(call.id, call.name, f"token={API_KEY}"),)),
        ),
    )


async def record(http, tmp_path: Path, cassette: Path) -> list:  # type: ignore[no-untyped-def]
    wire = make_wire("anthropic", http)
    wire.add(
        Reply(tool_calls=[("toolu_1", "lookup", {"q": "x"})], usage=(50, 5, 0, 40)),
        Reply(text="found: 42", usage=(60, 4, 40, 0)),
    )
    recorder = CassetteRecorder(cassette, workflow_root=tmp_path / "wf")
    provider = recorder.wrap(make_provider("anthropic", wire))
    first = conversation(tmp_path / "wf")[0]
    answer1 = await provider.complete(first)
    answer2 = await provider.complete(follow_up(first, answer1))
    await provider.aclose()
    return [answer1, answer2]


def replayer(cassette: Path, root: Path) -> ReplayProvider:
    env = ProviderEnv(name="replay", workflow_root=root, replies=cassette)
    return ReplayProvider.from_config(ProviderConfig(type="replay"), env)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
async def test_record_then_replay_round_trip(http, tmp_path: Path, suffix: str) -> None:
    cassette = tmp_path / f"cassette{suffix}"
    recorded = await record(http, tmp_path, cassette)
    text = cassette.read_text()
    document = yaml.safe_load(text) if suffix == ".yaml" else json.loads(text)
    assert [(i["task"], i["turn"]) for i in document["interactions"]] == [
        ("fetch", 0),
        ("fetch", 1),
    ]
    assert document["providers"] == ["anthropic"]
    assert API_KEY not in text, "secrets are stripped"
    assert str(tmp_path) not in text and "<workflow>/data" in text

    # replay from another checkout of the workflow, fully offline
    other_root = tmp_path / "elsewhere"
    provider = replayer(cassette, other_root)
    first = conversation(other_root)[0]
    answer1 = await provider.complete(first)
    answer2 = await provider.complete(follow_up(first, answer1))
    assert answer1 == recorded[0]
    assert answer2 == recorded[1]
    assert answer2.usage.cache_read_tokens == 40


async def test_mismatch_names_task_turn_and_difference(http, tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    await record(http, tmp_path, cassette)
    provider = replayer(cassette, tmp_path / "wf")
    first = conversation(tmp_path / "wf")[0]
    answer1 = await provider.complete(first)
    changed = follow_up(first, answer1)
    changed = ModelRequest(
        system=changed.system,
        tools=changed.tools,
        task_path="fetch",
        messages=(
            *changed.messages[:-1],
            ToolResultsMessage((ToolResult("toolu_1", "lookup", "something else"),)),
        ),
    )
    with pytest.raises(ProviderError) as caught:
        await provider.complete(changed)
    message = str(caught.value)
    assert caught.value.kind == "bad_request" and caught.value.code == "FP328"
    assert "task 'fetch' turn 1" in message
    assert "message 3 (tool) differs" in message and "something else" in message


async def test_missing_turn_is_a_clear_error(http, tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    await record(http, tmp_path, cassette)
    provider = replayer(cassette, tmp_path / "wf")
    request = ModelRequest(system="s", messages=(UserMessage("x"),), task_path="other/task")
    with pytest.raises(ProviderError) as caught:
        await provider.complete(request)
    assert caught.value.code == "FP329"
    assert "task 'other/task' turn 0" in str(caught.value)
    assert not caught.value.retryable


async def test_errors_are_recorded_and_replayed(http, tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    wire = make_wire("openai", http)
    wire.add(Failure(429, "slow down"), Reply(text="recovered"))
    recorder = CassetteRecorder(cassette)
    provider = recorder.wrap(make_provider("openai", wire))
    request = ModelRequest(system="s", messages=(UserMessage("x"),), task_path="flaky")
    with pytest.raises(ProviderError):
        await provider.complete(request)
    assert (await provider.complete(request)).text == "recovered"

    replay = replayer(cassette, tmp_path)
    with pytest.raises(ProviderError) as caught:
        await replay.complete(request)
    assert caught.value.kind == "rate_limit" and caught.value.retryable
    assert (await replay.complete(request)).text == "recovered"


def test_missing_cassette(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        replayer(tmp_path / "nope.yaml", tmp_path)
    assert caught.value.code == "FP327"
    with pytest.raises(ConfigError):
        ReplayProvider(ProviderConfig(type="replay"))


def test_cassette_relative_to_workflow_root(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"version": 1, "interactions": []}))
    provider = ReplayProvider(
        ProviderConfig(type="replay", replies="c.json"), workflow_root=tmp_path
    )
    assert provider.cassette == tmp_path / "c.json"


def test_malformed_cassette(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("just a string\n")
    with pytest.raises(ConfigError) as caught:
        replayer(bad, tmp_path)
    assert caught.value.code == "FP327"


def _workflow(root: Path, config: ProviderConfig) -> Workflow:
    task = Task(
        name="wf",
        path="",
        folder=root,
        config=TaskConfig(),
        settings=EffectiveSettings(),
        provider=ResolvedProvider("claude", "anthropic", config),
    )
    return Workflow(root=task, root_dir=root, name="wf")


async def test_pool_records_every_provider_call(http, tmp_path: Path) -> None:
    wire = make_wire("anthropic", http)
    wire.add(Reply(text="hello"))
    block = ProviderConfig(
        type="anthropic", model="claude-x", base_url=wire.base_url, api_key_env=KEY_ENV
    )
    workflow = _workflow(tmp_path, block)
    cassette = tmp_path / "run.yaml"
    pool = ProviderPool(workflow, record=cassette)
    provider = pool.for_task(workflow.root)
    await provider.complete(ModelRequest(system="s", messages=(UserMessage("hi"),)))
    await pool.aclose()
    document = yaml.safe_load(cassette.read_text())
    assert document["interactions"][0]["response"]["text"] == "hello"
    assert document["interactions"][0]["task"] == ""

    from prefect_folpipe.providers.registry import ProviderOverride

    replay_pool = ProviderPool(workflow, ProviderOverride("replay", cassette))
    replayed = replay_pool.for_task(workflow.root)
    answer = await replayed.complete(ModelRequest(system="s", messages=(UserMessage("hi"),)))
    assert answer.text == "hello"
    assert len(wire.requests) == 1, "replay made no HTTP call"


def test_checkpoint_identity_covers_exactly_the_tasks_own_turns(tmp_path: Path) -> None:
    """A task's identity is its recorded turns, in turn order: the file's order of the
    entries does not matter, another task's edit does not touch it, its own edit does."""

    def identities(interactions: list[dict]) -> dict[str, str]:
        cassette = tmp_path / "c.json"
        cassette.write_text(json.dumps({"interactions": interactions}))
        provider = replayer(cassette, tmp_path)
        tasks = {path: SimpleNamespace(path=path) for path in ("a", "b", "absent")}
        return {path: provider.checkpoint_identity(task) for path, task in tasks.items()}

    turn = lambda task, n, text: {"task": task, "turn": n, "response": {"text": text}}  # noqa: E731
    base = identities([turn("a", 0, "x"), turn("a", 1, "y"), turn("b", 0, "z")])
    assert len(set(base.values())) == 3 and all(v.startswith("cassette:") for v in base.values())
    assert identities([turn("b", 0, "z"), turn("a", 1, "y"), turn("a", 0, "x")]) == base
    other_edited = identities([turn("a", 0, "x"), turn("a", 1, "y"), turn("b", 0, "CHANGED")])
    assert other_edited["a"] == base["a"] and other_edited["b"] != base["b"]
    own_edited = identities([turn("a", 0, "x"), turn("a", 1, "CHANGED"), turn("b", 0, "z")])
    assert own_edited["a"] != base["a"] and own_edited["b"] == base["b"]
    assert identities([turn("b", 0, "z")])["absent"] == base["absent"]
