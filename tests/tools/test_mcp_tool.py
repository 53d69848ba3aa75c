"""mcp tools against a real MCP server (the SDK's MCPServer) started over stdio."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from prefect_folpipe.loader.tools._toolsmd import parse_tools_md
from prefect_folpipe.providers import ToolCall
from prefect_folpipe.tools.mcp import prepare_toolbox
from prefect_folpipe.tools.toolbox import Toolbox
from prefect_folpipe.workflow.config import McpServer, TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow

pytestmark = pytest.mark.slow  # real MCP servers in processes of their own

SERVER = Path(__file__).parent.parent / "fixtures" / "mcp" / "server.py"
TOOLS_MD = """## add
> type: mcp
> server: test

## loud
> type: mcp
> server: test
> tool: shout

Shout a text back.

## read_env
> type: mcp
> server: test

## explode
> type: mcp
> server: test

## vanished
> type: mcp
> server: test
> tool: no_such_tool

## elsewhere
> type: mcp
> server: undeclared
"""


def toolbox(tmp_path: Path, servers: dict[str, McpServer]) -> Toolbox:
    (tmp_path / "tools.md").write_text(TOOLS_MD)
    specs, diagnostics = parse_tools_md(tmp_path / "tools.md", owner="")
    assert not [d for d in diagnostics if d.severity == "error"], diagnostics
    task = Task(
        name="t",
        path="t",
        folder=tmp_path,
        config=TaskConfig(),
        settings=EffectiveSettings(tool_timeout=60.0),
        tools=tuple(specs),
    )
    root = Task(
        name="root",
        path="",
        folder=tmp_path,
        config=TaskConfig(mcp_servers=servers),
        settings=EffectiveSettings(),
        children=(task,),
    )
    return Toolbox(task, Workflow(root=root, root_dir=tmp_path, name="wf"), {})


def server(**env: str) -> McpServer:
    return McpServer(command=sys.executable, args=[str(SERVER)], env=env)


async def test_calls_schemas_env_and_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FOLPIPE_MCP_HOST_VALUE", "passed-explicitly")
    monkeypatch.setenv("FOLPIPE_MCP_NOT_PASSED", "hidden")
    box = toolbox(tmp_path, {"test": server(FROM_HOST="${FOLPIPE_MCP_HOST_VALUE}")})
    try:
        await prepare_toolbox(box)
        definitions = {d.name: d for d in box.definitions()}
        assert definitions["add"].parameters["required"] == ["a", "b"]
        assert definitions["add"].description == "Add two integers."
        assert definitions["loud"].description == "Shout a text back."  # tools.md wins
        assert set(definitions["loud"].parameters["properties"]) == {"text"}

        added, shouted = await asyncio.gather(
            box.call(ToolCall("1", "add", {"a": 2, "b": 3})),
            box.call(ToolCall("2", "loud", {"text": "hi"})),
        )
        assert not added.is_error and json.loads(added.content) == {"result": 5}
        assert not shouted.is_error and "HI" in shouted.content

        bad = await box.call(ToolCall("3", "add", {"a": "two"}))
        assert bad.is_error and "FP231" in bad.content  # schema from the server, checked locally

        passed = await box.call(ToolCall("4", "read_env", {"name": "FROM_HOST"}))
        assert "passed-explicitly" in passed.content
        hidden = await box.call(ToolCall("5", "read_env", {"name": "FOLPIPE_MCP_NOT_PASSED"}))
        assert "<unset>" in hidden.content

        failed = await box.call(ToolCall("6", "explode", {"message": "boom"}))
        assert failed.is_error and "test/explode failed" in failed.content

        missing = await box.call(ToolCall("7", "vanished", {}))
        assert missing.is_error and "no tool 'no_such_tool'" in missing.content

        undeclared = await box.call(ToolCall("8", "elsewhere", {}))
        assert undeclared.is_error and "'undeclared' is not declared" in undeclared.content
    finally:
        await box.aclose()


async def test_server_that_cannot_start(tmp_path: Path) -> None:
    broken = McpServer(
        command=sys.executable,
        args=["-c", "import sys; sys.stderr.write('bad config'); sys.exit(3)"],
    )
    box = toolbox(tmp_path, {"test": broken})
    try:
        await prepare_toolbox(box)  # logs and keeps the declared tools
        result = await box.call(ToolCall("1", "add", {"a": 1, "b": 2}))
        assert result.is_error
        assert "MCP server 'test' could not be started" in result.content
        assert "bad config" in result.content
    finally:
        await box.aclose()


async def test_missing_command(tmp_path: Path) -> None:
    box = toolbox(tmp_path, {"test": McpServer(command="folpipe-no-such-mcp-server-cmd")})
    try:
        result = await box.call(ToolCall("1", "add", {"a": 1, "b": 2}))
        assert result.is_error and "could not be started" in result.content
    finally:
        await box.aclose()


@pytest.mark.parametrize("entry", [McpServer()])
async def test_server_without_command_or_url(tmp_path: Path, entry: McpServer) -> None:
    box = toolbox(tmp_path, {"test": entry})
    try:
        result = await box.call(ToolCall("1", "add", {"a": 1, "b": 2}))
        assert result.is_error and "neither `command` nor `url`" in result.content
    finally:
        await box.aclose()


class _Recorder:
    """A provider that calls ``add`` once, then answers; keeps every request it saw."""

    name = "recorder"
    supports_tools = True

    def __init__(self) -> None:
        self.requests: list = []

    async def complete(self, request):  # type: ignore[no-untyped-def]
        from prefect_folpipe.providers import ModelResponse

        self.requests.append(request)
        if len(self.requests) == 1:
            return ModelResponse(tool_calls=(ToolCall("c1", "add", {"a": 20, "b": 22}),))
        return ModelResponse(text="the sum is 42")

    async def aclose(self) -> None:
        return None


async def test_agent_sends_server_schemas_and_gets_results(tmp_path: Path) -> None:
    from dataclasses import replace

    from prefect_folpipe.agent import run_task

    box = toolbox(tmp_path, {"test": server()})
    task = replace(box.task, instructions="Add numbers.", system_prompt="Add numbers.")
    workflow = replace(box.workflow, root=replace(box.workflow.root, children=(task,)))
    provider = _Recorder()
    outcome = await run_task(task, workflow, {}, provider=provider)
    tools = {t.name: t for t in provider.requests[0].tools}
    assert tools["add"].parameters["required"] == ["a", "b"]
    results = provider.requests[1].messages[-1].results
    assert json.loads(results[0].content) == {"result": 42}
    assert outcome.delta


@pytest.fixture
def http_mcp_server():  # type: ignore[no-untyped-def]
    """The test server over Streamable HTTP on 127.0.0.1; yields its /mcp URL."""
    import socket
    import subprocess
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_url_server(tmp_path: Path, http_mcp_server: str) -> None:
    box = toolbox(tmp_path, {"test": McpServer(url=http_mcp_server)})
    try:
        await prepare_toolbox(box)
        definitions = {d.name: d for d in box.definitions()}
        assert definitions["add"].parameters["required"] == ["a", "b"]
        result = await box.call(ToolCall("1", "add", {"a": 40, "b": 2}))
        assert not result.is_error and json.loads(result.content) == {"result": 42}
    finally:
        await box.aclose()


async def test_tool_list_is_fetched_once_per_server(tmp_path: Path) -> None:
    from prefect_folpipe.tools.mcp import CONNECTIONS_KEY

    servers = {"test": server()}
    first = toolbox(tmp_path, servers)
    try:
        await prepare_toolbox(first)
        assert "test" in first.ctx.resources[CONNECTIONS_KEY]
    finally:
        await first.aclose()

    second = toolbox(tmp_path, servers)
    try:
        await prepare_toolbox(second)
        assert not second.ctx.resources.get(CONNECTIONS_KEY), "no server started for schemas"
        assert {d.name: d for d in second.definitions()}["add"].parameters["required"] == [
            "a",
            "b",
        ]
        result = await second.call(ToolCall("1", "add", {"a": 1, "b": 1}))
        assert json.loads(result.content) == {"result": 2}
        assert "test" in second.ctx.resources[CONNECTIONS_KEY]
    finally:
        await second.aclose()
