"""``mcp`` tools: call a tool of an MCP server through the official ``mcp`` SDK (2.x ``Client``).

Servers are declared once, in the root ``task.yaml``::

    mcp_servers:
      files: {command: python, args: [servers/files.py], env: {ROOT: "${DATA_DIR}"}}
      slack: {url: "https://mcp.example.com/slack/mcp"}

and tools.md entries point at them::

    ## slack_notify
    > type: mcp
    > server: slack
    > tool: send_message

A stdio server is started (working directory: the workflow root) the first time a task run
calls one of its tools and stopped when the task's toolbox closes; it gets only a minimal
environment plus its ``env:`` entries, where ``${VAR}`` passes a variable of the host
explicitly. The server's tool list gives each tool its JSON schema and, when tools.md has
none, its description (``prepare_toolbox``); the list is fetched once per server and process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..authoring import ToolContext
from ..workflow.config import McpServer
from ..workflow.toolmeta import ENV_REFERENCE
from ..workflow.tree import ToolSpec
from .toolbox import CodedToolError, register_runner

_LISTINGS: dict[tuple[str, str, str], dict[str, Any]] = {}
"""Tool lists seen per (workflow root, server name, server settings): later task runs get the
schemas without starting the server until a tool is actually called."""

CONNECTIONS_KEY = "mcp_connections"
LOCK_KEY = "mcp_connections_lock"
DEFAULT_STARTUP_TIMEOUT = 60.0
STDERR_TAIL = 2000


class McpToolError(CodedToolError):
    """An MCP server could not be used, or one of its tools reported an error."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise McpToolError(
            "mcp tools need the MCP SDK: pip install 'prefect-folpipe[mcp]'", code="FP254"
        ) from None
    if not hasattr(mcp, "Client"):
        raise McpToolError("mcp tools need mcp>=2 (mcp.Client)", code="FP254")
    return mcp


class McpConnection:
    """One live session with one MCP server, owned by a background task.

    The SDK's client must be entered and exited by the same task; tool calls may come from any
    task of the same event loop (parallel tool calls), so a dedicated task owns the session.
    """

    def __init__(self, name: str, server: McpServer, workflow_root: Path) -> None:
        self.name = name
        self.server = server
        self.workflow_root = workflow_root
        self.tools: dict[str, Any] = {}
        self._client: Any = None
        self._stop = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        # the server's stderr, for startup errors; lives as long as the connection (aclose)
        self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )

    async def open(self, timeout: float = DEFAULT_STARTUP_TIMEOUT) -> None:
        """Start (or connect to) the server and read its tool list."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._own(ready), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self.aclose()
            raise McpToolError(
                f"MCP server {self.name!r} did not start within {timeout:g}s{self._stderr_tail()}",
                code="FP251",
                retryable=True,
            ) from None
        except McpToolError:
            await self.aclose()
            raise

    async def _own(self, ready: asyncio.Future[None]) -> None:
        try:
            async with _sdk().Client(self._transport()) as client:
                self.tools = await _list_tools(client)
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the SDK raises exception groups from its task groups
            if not ready.done():
                ready.set_exception(self._startup_error(exc))
        finally:
            self._client = None

    def _transport(self) -> Any:
        if self.server.url:
            return self.server.url
        if not self.server.command:
            raise McpToolError(
                f"MCP server {self.name!r} has neither `command` nor `url`", code="FP250"
            )
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=self.server.command,
            args=list(self.server.args),
            env={key: expand_env(value) for key, value in self.server.env.items()},
            cwd=str(self.workflow_root),
        )
        return stdio_client(params, errlog=self._stderr)

    def _startup_error(self, exc: BaseException) -> McpToolError:
        if isinstance(exc, McpToolError):
            return exc
        detail = _leaf_message(exc)
        return McpToolError(
            f"MCP server {self.name!r} could not be started or reached: {detail}"
            f"{self._stderr_tail()}",
            code="FP251",
            retryable=not isinstance(exc, FileNotFoundError | PermissionError),
        )

    def _stderr_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            text = self._stderr.read()[-STDERR_TAIL:].strip()
            if text:
                return f"; server stderr:\n{text}"
        return ""

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call ``tool``; its result as JSON-friendly data, or McpToolError."""
        if self._client is None:
            raise McpToolError(
                f"MCP server {self.name!r} is not connected (it may have exited)",
                code="FP251",
                retryable=True,
            )
        if tool not in self.tools:
            available = ", ".join(sorted(self.tools)) or "none"
            raise McpToolError(
                f"MCP server {self.name!r} has no tool {tool!r} (it has: {available})",
                code="FP252",
            )
        result = await self._client.call_tool(tool, dict(arguments))
        return tool_result(result, self.name, tool)

    async def aclose(self) -> None:
        """Stop the session (and the server process it started)."""
        self._stop.set()
        if self._owner is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._owner, 10.0)
        with contextlib.suppress(OSError):
            self._stderr.close()


async def _list_tools(client: Any) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.update({tool.name: tool for tool in page.tools})
        cursor = page.next_cursor
        if not cursor:
            return tools


def _leaf_message(exc: BaseException) -> str:
    """The innermost useful message of a (possibly grouped) exception."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def expand_env(value: str) -> str:
    """``${VAR}`` in an ``mcp_servers`` env value: the host's variable (empty when unset)."""
    return ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), ""), value)


def tool_result(result: Any, server: str, tool: str) -> Any:
    """Structured content when given, else the text blocks; ``is_error`` raises."""
    texts = [_block_text(block) for block in result.content or ()]
    if result.is_error:
        detail = "\n".join(t for t in texts if t) or "the tool reported an error"
        raise McpToolError(f"MCP tool {server}/{tool} failed: {detail}", code="FP253")
    if result.structured_content is not None:
        return result.structured_content
    return "\n".join(texts)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        resource = block.resource
        return str(getattr(resource, "text", None) or f"[resource {resource.uri}]")
    mime = getattr(block, "mime_type", None) or getattr(block, "mimeType", None) or kind
    return f"[{kind} content: {mime}]"


def servers_of(ctx: ToolContext) -> Mapping[str, McpServer]:
    workflow = ctx.workflow
    return workflow.root.config.mcp_servers if workflow is not None else {}


async def connection_for(ctx: ToolContext, name: str) -> McpConnection:
    """The task run's connection to server ``name`` (opened on first use, closed with ctx)."""
    connections: dict[str, McpConnection] = ctx.resources.setdefault(CONNECTIONS_KEY, {})
    lock: asyncio.Lock = ctx.resources.setdefault(LOCK_KEY, asyncio.Lock())
    async with lock:
        if name in connections:
            return connections[name]
        servers = servers_of(ctx)
        if name not in servers:
            declared = ", ".join(sorted(servers)) or "none"
            raise McpToolError(
                f"MCP server {name!r} is not declared in the root task.yaml `mcp_servers:` "
                f"(declared: {declared})",
                code="FP250",
            )
        connection = McpConnection(name, servers[name], ctx.workflow_root)
        await connection.open()
        _LISTINGS[_listing_key(ctx, name)] = connection.tools
        connections[name] = connection
        ctx.on_close(connection.aclose)
        return connection


def _listing_key(ctx: ToolContext, name: str) -> tuple[str, str, str]:
    server = servers_of(ctx).get(name)
    settings = server.model_dump_json() if server is not None else ""
    return (str(ctx.workflow_root), name, settings)


async def server_tools(ctx: ToolContext, name: str) -> dict[str, Any]:
    """The tools of server ``name``: from an earlier listing of this process, else live."""
    cached = _LISTINGS.get(_listing_key(ctx, name))
    if cached is not None:
        return cached
    return (await connection_for(ctx, name)).tools


async def run_mcp_tool(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
    """Runner for ``type: mcp`` tools."""
    server = str(spec.metadata.get("server", ""))
    connection = await connection_for(ctx, server)
    return await connection.call(str(spec.metadata.get("tool") or spec.name), arguments)


async def prepare_toolbox(toolbox: Any) -> None:
    """Give the toolbox's mcp tools the schema (and missing description) of the server's tool.

    Call it before the first tool call. A server whose tool list this process has not seen
    yet is started (the connection is reused by the calls and closed with the toolbox); later
    task runs reuse the list and start the server only when a tool is called. A server that
    cannot start leaves its tools as declared (the first call then reports the error).
    """
    for name, spec in list(toolbox.tools.items()):
        if spec.kind != "mcp":
            continue
        try:
            tools = await server_tools(toolbox.ctx, str(spec.metadata.get("server", "")))
        except McpToolError as exc:
            toolbox.logger.warning("mcp tool %s: %s", name, exc)
            continue
        remote = tools.get(str(spec.metadata.get("tool") or spec.name))
        if remote is None:
            continue
        toolbox.tools[name] = with_remote_schema(spec, remote)


def with_remote_schema(spec: ToolSpec, remote: Any) -> ToolSpec:
    """``spec`` with the server's input schema; declared parameters and description win."""
    declared = dict(spec.parameters.get("properties") or {})
    parameters = spec.parameters if declared else dict(remote.input_schema or {"type": "object"})
    description = spec.description or (remote.description or "")
    return dataclasses.replace(spec, parameters=parameters, description=description)


register_runner("mcp", run_mcp_tool)
