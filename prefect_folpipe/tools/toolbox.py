"""The tool runtime of one task run: ``Toolbox`` and the runner registry.

A **runner** executes one kind of tool::

    async def runner(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> Any

It receives arguments already validated against ``spec.parameters`` and returns any value
(``str`` is passed through, anything else becomes JSON). It raises for failures:
``ToolError`` (or a subclass) with ``retryable = False`` is reported at once, any other
exception is retried up to the tool's ``retries``. Time-outs are applied by the Toolbox
(cancelling the runner), so a runner that starts processes must clean up on
``CancelledError``. Per-task state (sessions) goes in ``ctx.resources`` with cleanup via
``ctx.on_close``.

``python``, ``shell`` and ``reference`` are built in; ``http`` and ``mcp`` live in
``prefect_folpipe.tools.http`` / ``.mcp``, which call :func:`register_runner` when imported.
The Toolbox imports them the first time such a tool is called.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .. import telemetry
from .._messages import ToolCall, ToolDefinition, ToolResult
from ..authoring import ToolContext
from ..errors import ToolError, did_you_mean
from ..redaction import redact, register_secret
from ..workflow.context import ENV_KEY
from ..workflow.tree import ToolSpec
from .approval import decide, gate_of
from .attempts import DECLINED, ArgumentChecker, Outcome, Runner, error, result_text, run_attempts
from .python import run_python
from .shell import ShellToolFailed, context_env, json_object, run_script, sandbox_env

if TYPE_CHECKING:
    from ..workflow.tree import Task, Workflow

RUNNERS: dict[str, Runner] = {}
LAZY_RUNNER_MODULES: dict[str, str] = {
    "http": "prefect_folpipe.tools.http",
    "mcp": "prefect_folpipe.tools.mcp",
}
MAX_SHELL_OUTPUT = 1_000_000
TRUNCATION_MARKER = "\n[... truncated {dropped} of {total} characters]"


TOOL_STUBS: ContextVar[Mapping[str, Any] | None] = ContextVar("folpipe_tool_stubs", default=None)
"""Tool name -> the value the tool returns instead of running (``folpipe test``). The model's
arguments are still checked against the tool's schema first."""


def register_runner(kind: str, runner: Runner) -> None:
    """Make ``runner`` execute tools of type ``kind`` (replaces an earlier one)."""
    RUNNERS[kind] = runner


class CodedToolError(ToolError):
    """A runner's failure with its own error code, retried only when ``retryable``."""

    def __init__(self, message: str, *, code: str, retryable: bool = False) -> None:
        super().__init__(message, code=code)
        self.retryable = retryable


async def run_shell_tool(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> str:
    """Run a shell tool in the sandbox with its task's context; a non-zero exit raises
    ShellToolFailed with output. A whole output that is a JSON object is merged into the
    context (and is also what the model reads)."""
    with tempfile.TemporaryDirectory(prefix="folpipe-tool-") as scratch:
        env = sandbox_env(arguments, extra=_context_env(ctx, scratch))
        result = await run_script(
            spec.code or "",
            cwd=ctx.task_dir,
            env=env,
            max_output=MAX_SHELL_OUTPUT,
            stdin=json.dumps(dict(arguments), ensure_ascii=False).encode(),
        )
    if result.returncode != 0:
        raise ShellToolFailed(
            f"exited with status {result.returncode}",
            output=result.output,
            returncode=result.returncode,
        )
    update = None if result.truncated else json_object(result.output)
    if update is not None:
        ctx.context.update(update)
    return result.output


def _context_env(ctx: ToolContext, scratch: str) -> dict[str, str]:
    task = ctx.task
    context = {k: v for k, v in ctx.context.items() if k != ENV_KEY}
    return context_env(
        context,
        scratch,
        task_name=task.name if task is not None else "",
        task_path=task.path if task is not None else "",
        task_dir=ctx.task_dir,
        workflow_root=ctx.workflow_root,
    )


async def run_reference_tool(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
    """Reference tools only describe a capability."""
    raise ToolError(f"tool {spec.name!r} is a reference tool: it is not executable")


register_runner("python", run_python)
register_runner("shell", run_shell_tool)
register_runner("reference", run_reference_tool)


def runner_for(kind: str) -> Runner | None:
    """The runner of a tool kind, importing the http / mcp modules on first use."""
    if kind not in RUNNERS and kind in LAZY_RUNNER_MODULES:
        try:
            import_module(LAZY_RUNNER_MODULES[kind])
        except ImportError as exc:
            raise ToolError(
                f"{kind} tools are not available: {exc} "
                f"(install the extra: pip install 'prefect-folpipe[{kind}]')"
            ) from None
    return RUNNERS.get(kind)


@dataclass
class ToolCallRecord:
    """One tool call as kept for artifacts and transcripts."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool
    duration_s: float
    attempts: int = 0
    code: str | None = None
    replayed: bool = False
    """Answered from the journal (a ``replay: safe`` tool on a resumed pass): not run."""
    approval: dict[str, Any] | None = None
    """The answer of the tool's approval gate (question, answer, who answered)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Toolbox:
    """The tools of one task run: definitions for the model, and ``call`` to run one.

    ``call`` never raises for tool problems (unknown tool, bad arguments, failures, time-outs,
    sandbox violations): they become error results the model can reason about. Only
    ``CancelledError`` propagates. ``log`` keeps every call for artifacts.
    """

    def __init__(
        self,
        task: Task,
        workflow: Workflow,
        context: MutableMapping[str, Any],
        *,
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    ) -> None:
        self.task = task
        self.workflow = workflow
        self.logger = logger or logging.getLogger("prefect_folpipe.tools")
        self.tools: dict[str, ToolSpec] = {spec.name: spec for spec in task.tools}
        self.ctx = ToolContext(
            context=context,
            task_dir=task.folder,
            workflow_root=workflow.root_dir,
            logger=self.logger,
            task=task,
            workflow=workflow,
        )
        self.log: list[ToolCallRecord] = []
        self.arguments = ArgumentChecker()
        self._approvals: dict[str, dict[str, Any]] = {}
        """Call id -> the approval its call got (question, answer, who answered)."""

    @property
    def context(self) -> MutableMapping[str, Any]:
        return self.ctx.context

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """What the model is told about each executable tool."""
        return tuple(
            ToolDefinition(spec.name, spec.description or spec.name, dict(spec.parameters))
            for spec in self.tools.values()
            if spec.executable
        )

    def reference_text(self) -> str:
        """A system-prompt block describing the reference tools ("" when there are none)."""
        references = [spec for spec in self.tools.values() if not spec.executable]
        if not references:
            return ""
        lines = [
            "## Reference tools",
            "These capabilities are described for you; they are not callable as tools:",
        ]
        for spec in references:
            text = " ".join((spec.description or "").split())
            lines.append(f"- {spec.name}: {text}" if text else f"- {spec.name}")
        return "\n".join(lines)

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one tool call and answer it; tool problems become ``is_error`` results."""
        started = time.perf_counter()
        spec = self.tools.get(call.name)
        with telemetry.tool_span(call, spec.kind if spec else None) as span:
            outcome = await self._dispatch(call)
            content = self._finish(outcome.text(), spec)
            duration = time.perf_counter() - started
            span.done(
                content,
                outcome.is_error,
                code=outcome.code,
                attempts=outcome.attempts,
                duration_s=duration,
            )
        record = ToolCallRecord(
            call_id=call.id,
            name=call.name,
            arguments=_plain(call.arguments),
            result=content,
            is_error=outcome.is_error,
            duration_s=round(duration, 6),
            attempts=outcome.attempts,
            code=outcome.code,
            approval=self._approvals.pop(call.id, None),
        )
        self.log.append(record)
        shown = call.name if call.name in self.tools else repr(call.name)  # no forged log lines
        self.logger.info(
            "tool %s %s in %.3fs", shown, "failed" if outcome.is_error else "ok", duration
        )
        return ToolResult(call.id, call.name, content, outcome.is_error)

    def replayed(self, call: ToolCall, result: ToolResult) -> None:
        """Log a call answered from the journal (it did not run)."""
        record = ToolCallRecord(
            call.id, call.name, _plain(call.arguments), result.content, result.is_error, 0.0
        )
        record.replayed = True
        self.log.append(record)
        spec = self.tools.get(call.name)
        with telemetry.tool_span(call, spec.kind if spec else None, replayed=True) as span:
            span.done(result.content, result.is_error, code=None, attempts=0, duration_s=0.0)

    async def aclose(self) -> None:
        """Release HTTP clients and runner resources."""
        await self.ctx.aclose()

    async def __aenter__(self) -> Toolbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ----------------------------------------------------------------- internals

    async def _dispatch(self, call: ToolCall) -> Outcome:
        spec = self.tools.get(call.name)
        if spec is None:
            return self._unknown(call.name)
        if not spec.executable:
            return error(
                "FP235",
                f"{spec.name!r} is a reference tool: it describes a capability and cannot be "
                "called",
            )
        arguments = call.arguments
        if not isinstance(arguments, Mapping):
            return error("FP231", f"arguments of {spec.name!r} must be a JSON object")
        problem = self.arguments.problem(spec, arguments)
        if problem:
            return error("FP231", f"invalid arguments for {spec.name!r}: {problem}")
        gate = gate_of(spec, arguments, self.ctx.context)
        if gate is not None:  # asks before it runs (raises when nobody can answer)
            runs, declined, self._approvals[call.id] = await decide(gate)
            if not runs:
                return Outcome(declined, True, 0, DECLINED)
        stubs = TOOL_STUBS.get()
        if stubs is not None and spec.name in stubs:
            return Outcome(result_text(stubs[spec.name]), False, 1)
        try:
            runner = runner_for(spec.kind)
        except ToolError as exc:
            return error("FP236", str(exc))
        if runner is None:
            return error("FP236", f"no runner for {spec.kind} tools ({spec.name!r})")
        return await run_attempts(
            spec, runner, dict(arguments), self.ctx, self.task.settings, self.logger
        )

    def _unknown(self, name: str) -> Outcome:
        available = ", ".join(sorted(s.name for s in self.tools.values() if s.executable))
        hint = did_you_mean(name, self.tools)
        message = f"unknown tool {name!r}. Available tools: {available or 'none'}."
        return error("FP230", f"{message} {hint}" if hint else message)

    def _finish(self, content: str, spec: ToolSpec | None) -> str:
        """Redact (secret values always, file names unless allowed), then cap the length."""
        settings = self.task.settings
        text = redact(
            content,
            allow_sensitive_files=settings.allow_sensitive_files,
            env=os.environ,
            extra=_declared_env_values(spec),
        )
        limit = settings.tool_result_max_chars
        if len(text) > limit:
            text = text[:limit] + TRUNCATION_MARKER.format(
                dropped=len(text) - limit, total=len(text)
            )
        return text


def _declared_env_values(spec: ToolSpec | None) -> list[str]:
    """Values of the environment variables a tool declares it reads (``> env: [...]``)."""
    names = spec.metadata.get("env") if spec is not None else None
    if isinstance(names, str):
        names = [part.strip() for part in names.split(",")]
    if not isinstance(names, list | tuple):
        return []
    values = [os.environ[name] for name in names if isinstance(name, str) and name in os.environ]
    register_secret(*values)  # masked by every sink, not only in this tool's results
    return values


def _plain(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return {"_raw": arguments}
