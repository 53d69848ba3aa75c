"""Provider blocks as folpipe 0.1.8 reads them (issue 13 point 1), against real SDK clients
talking to wire servers on 127.0.0.1: a child's own ``providers:`` block overrides the root's
for its subtree, Ollama options pass through, and ``type: http`` maps to the SDK adapters."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_folpipe import validate_workflow
from prefect_folpipe.compile.api import arun_workflow
from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.validate import load_workflow

from .conftest import API_KEY, KEY_ENV, make_wire
from .wire import Reply

pytestmark = pytest.mark.prefect

ROOT = """\
name: cv
providers:
  default: ollama
  ollama:
    module: agentflow.providers.ollama
    model: llama3.2:3b
    base_url: {base_url}
    num_ctx: 32768
    top_k: 20
settings:
  max_retries: 0
subtasks:
  execution_type: sequential
"""
CHILD = """\
providers:
  default: ollama
  ollama:
    module: agentflow.providers.ollama
    model: qwen2.5:7b
    num_predict: 64
    repeat_penalty: 1.1
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


async def test_a_child_block_overrides_the_root_for_its_subtree(prefect_harness, tmp_path, http):  # type: ignore[no-untyped-def]
    wire = make_wire("ollama", http)
    wire.add(Reply(text="draft"), Reply(text="pdf"), Reply(text="check"))
    root = write(
        tmp_path / "wf",
        {
            "task.yaml": ROOT.format(base_url=wire.base_url),
            "subtasks/10_draft/instructions.md": "Draft.",
            "subtasks/20_final/task.yaml": CHILD,
            "subtasks/20_final/subtasks/pdf/instructions.md": "Render.",
            "subtasks/20_final/subtasks/check/instructions.md": "Check.",
        },
    )
    assert validate_workflow(root) == []
    result = await arun_workflow(root, options=RunOptions(fresh=True))
    assert result.status == "completed", result.error
    draft, *subtree = wire.requests
    assert draft["model"] == "llama3.2:3b"
    assert draft["options"] == {"num_ctx": 32768, "top_k": 20}
    assert len(subtree) == 2
    for request in subtree:  # the block applies to the child's whole subtree
        assert request["model"] == "qwen2.5:7b"
        assert request["options"] == {
            "num_ctx": 32768,  # merged from the root's block of the same name
            "top_k": 20,
            "num_predict": 64,
            "repeat_penalty": 1.1,
        }


def test_ollama_options_in_agent_and_unknown_keys(tmp_path):  # type: ignore[no-untyped-def]
    root = write(
        tmp_path / "wf",
        {
            "task.yaml": ROOT.format(base_url="http://127.0.0.1:9")
            + "agent:\n  num_ctx: 8192\n  nmu_ctx: 1\n",
            "instructions.md": "x",
            "subtasks/a/task.yaml": "providers:\n  ollama:\n    tool_calling: prompt\n",
            "subtasks/a/instructions.md": "x",
        },
    )
    found = {(d.code, d.file, d.line) for d in validate_workflow(root)}
    assert found == {
        ("FP161", "task.yaml", 16),  # nmu_ctx: did you mean num_ctx?
        ("FP164", "subtasks/a/task.yaml", 3),  # tool_calling: prompt has no effect
    }


HTTP_ROOT = """\
providers:
  default: gateway
  gateway:
    type: http
    base_url: {base_url}
    format: {format}
    model: served-model
    {key}
settings:
  max_retries: 0
"""


@pytest.mark.parametrize("with_key", [False, True])
async def test_http_format_openai_uses_the_openai_adapter(  # type: ignore[no-untyped-def]
    prefect_harness, tmp_path, http, monkeypatch, with_key
):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    wire = make_wire("openai", http)
    wire.add(Reply(text="hello"))
    key = f"api_key_env: {KEY_ENV}" if with_key else ""
    root = write(
        tmp_path / "wf",
        {
            "task.yaml": HTTP_ROOT.format(base_url=wire.base_url, format="openai", key=key),
            "instructions.md": "Say hello.",
        },
    )
    assert validate_workflow(root) == []
    assert load_workflow(root).root.provider.type == "openai"
    result = await arun_workflow(root, options=RunOptions(fresh=True))
    assert result.status == "completed", result.error
    assert wire.requests[0]["model"] == "served-model"
    expected = f"Bearer {API_KEY}" if with_key else "Bearer not-needed"
    assert wire.headers[0]["authorization"] == expected


async def test_http_format_anthropic_uses_the_anthropic_adapter(  # type: ignore[no-untyped-def]
    prefect_harness, tmp_path, http, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    wire = make_wire("anthropic", http)
    wire.add(Reply(text="hello"))
    root = write(
        tmp_path / "wf",
        {
            "task.yaml": HTTP_ROOT.format(
                base_url=wire.base_url + "/v1", format="anthropic", key=f"api_key_env: {KEY_ENV}"
            ),
            "instructions.md": "Say hello.",
        },
    )
    workflow = load_workflow(root)
    assert workflow.root.provider.type == "anthropic"
    assert workflow.root.provider.config.base_url == wire.base_url  # /v1 is the SDK's
    result = await arun_workflow(root, options=RunOptions(fresh=True))
    assert result.status == "completed", result.error
    assert API_KEY in wire.headers[0].get("x-api-key", wire.headers[0].get("authorization", ""))


def test_http_block_mistakes(tmp_path):  # type: ignore[no-untyped-def]
    bad_format = write(
        tmp_path / "a",
        {
            "task.yaml": HTTP_ROOT.format(base_url="http://x", format="grpc", key=""),
            "instructions.md": "x",
        },
    )
    [problem] = validate_workflow(bad_format)
    assert (problem.code, problem.line) == ("FP165", 6)
    assert "format" in problem.message
    no_url = write(
        tmp_path / "b",
        {
            "task.yaml": "providers:\n  default: g\n  g:\n    type: http\n",
            "instructions.md": "x",
        },
    )
    [problem] = validate_workflow(no_url)
    assert (problem.code, problem.line) == ("FP165", 3)
    legacy = write(
        tmp_path / "c",
        {
            "task.yaml": "providers:\n  default: g\n  g:\n    module: agentflow.providers.http\n"
            "    base_url: http://127.0.0.1:9/v1\n",
            "instructions.md": "x",
        },
    )
    assert validate_workflow(legacy) == []
    assert load_workflow(legacy).root.provider.type == "openai"


def test_a_module_makes_a_block_custom_whatever_its_key(tmp_path):  # type: ignore[no-untyped-def]
    root = write(
        tmp_path / "wf",
        {
            "task.yaml": "providers:\n  default: claude\n  claude:\n    module: my.mod\n"
            "    custom_param: 1\n",
            "instructions.md": "x",
        },
    )
    assert validate_workflow(root) == []
    assert load_workflow(root).root.provider.type == "custom"


def test_the_018_fake_provider_points_at_scripted() -> None:
    from prefect_folpipe.errors import ConfigError
    from prefect_folpipe.providers.classes import resolve_provider_class

    with pytest.raises(ConfigError) as info:
        resolve_provider_class(None, "agentflow.providers.fake")
    assert info.value.code == "FP302"
    assert "--provider scripted" in (info.value.hint or "")
