"""The conversation loop of one agent pass: model call, tool calls, structured-output repair.

Turns: ``settings.max_turns`` bounds the model calls of the tool loop. When the answer of the
last allowed call still asks for tools, the pass fails with ``MaxTurnsExceeded``. Repair
re-prompts for bad structured output do not count as turns; they have their own bound,
``settings.output_retries``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .. import telemetry
from .._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    message_to_dict,
)
from .._process.wording import plural
from ..errors import ConfigError, MaxTurnsExceeded, OutputValidationError, ProviderError
from ..providers.base import Provider
from ..providers.registry import provider_name
from ..redaction import mask_exception
from ..workflow.tree import Task
from .journal import Journal
from .output import check_output, output_schema, repair_prompt
from .result import attach_report

LOG = logging.getLogger("prefect_folpipe.agent")
EXCERPT_CHARS = 500


@runtime_checkable
class CallLedger(Protocol):
    """What the loop asks of a budget ledger (``agent.budget.BudgetLedger`` implements it).

    ``before_call`` runs before every model call and raises ``errors.BudgetExceeded`` to stop
    it; ``after_call`` is told the call's usage and the model that answered, and may return
    the call's cost (a float) to add to ``TaskOutcome.cost``. A ledger may also define
    ``failed_call(task)``, told of every call that raised (it counts as a model call with no
    tokens). Any of them may be a coroutine function.
    """

    def before_call(self, task: Task) -> Any: ...

    def after_call(self, task: Task, usage: Usage, *, model: str | None = None) -> Any: ...


class ReplayLedger(Protocol):
    """Optional: a ledger told of every call answered from the journal (free, no budget)."""

    def replayed(self, task: Task, usage: Usage, *, model: str | None = None) -> Any: ...


class ToolDispatcher(Protocol):
    """The part of ``tools.runtime.Toolbox`` the loop uses."""

    def definitions(self) -> Sequence[ToolDefinition]: ...

    async def call(self, call: ToolCall) -> ToolResult: ...


@dataclass
class Conversation:
    """State and result of one agent pass."""

    messages: list[Message] = field(default_factory=list)
    text: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    """Calls the model answered (paid); journal answers are ``replayed_calls``."""
    replayed_calls: int = 0
    replayed_usage: Usage = field(default_factory=Usage)
    """What the replayed answers once cost (they cost nothing now)."""
    tool_calls: int = 0
    cost: float = 0.0
    model: str | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    tool_log: list[dict[str, Any]] = field(default_factory=list)

    @property
    def transcript(self) -> list[dict[str, Any]]:
        return [message_to_dict(message) for message in self.messages]

    def stats(self) -> dict[str, Any]:
        """Counters attached to an error raised mid-conversation (``exc.stats``)."""
        return {
            "model_calls": self.model_calls,
            "replayed_calls": self.replayed_calls,
            "tool_calls": self.tool_calls,
            "usage": self.usage.to_dict(),
        }


@dataclass(frozen=True)
class AgentPass:
    """Everything fixed for one pass: who to ask, what to send, what to expect back."""

    task: Task
    provider: Provider
    system: str
    user_message: str
    tools: ToolDispatcher | None = None
    output_types: Mapping[str, str | None] = field(default_factory=dict)
    iteration: int | None = None
    ledger: CallLedger | None = None
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None
    journal: Journal | None = None
    """Answers of earlier attempts of this pass (``agent.journal``); ``None``: always live."""


async def converse(agent: AgentPass) -> Conversation:
    """Run the loop until a final answer (validated when outputs are declared)."""
    convo = Conversation(messages=[UserMessage(agent.user_message)])
    try:
        await _run(agent, convo)
    except (MaxTurnsExceeded, OutputValidationError, ProviderError) as exc:
        exc.stats = convo.stats()  # type: ignore[attr-defined]
        if isinstance(exc, ProviderError):
            _mask_secrets(exc)
            if exc.provider is None:
                exc.provider = str(getattr(agent.provider, "name", None) or "provider")
        _report(exc, agent, convo)
        raise
    except Exception as exc:
        _report(exc, agent, convo)
        raise
    return convo


def _report(exc: BaseException, agent: AgentPass, convo: Conversation) -> None:
    """What the pass had done when it failed, for the failed task's artifact."""
    attach_report(
        exc,
        system=agent.system,
        rejected=list(convo.attempts),
        model_calls=convo.model_calls,
        tool_calls=convo.tool_calls,
        model=convo.model,
    )


def _mask_secrets(exc: ProviderError) -> None:
    """A provider's message may echo a request header or key (a custom adapter, a proxy):
    mask it through the redaction registry before Prefect logs or stores the error."""
    mask_exception(exc)


async def _run(agent: AgentPass, convo: Conversation) -> None:
    settings = agent.task.settings
    definitions = tuple(agent.tools.definitions()) if agent.tools is not None else ()
    turns = 0
    repairs = 0
    while True:
        response = await _call_model(agent, convo, definitions)
        convo.messages.append(AssistantMessage(response.text, tuple(response.tool_calls)))
        if response.tool_calls:
            turns += 1
            if turns >= settings.max_turns:
                raise _max_turns(agent.task, settings.max_turns)
            results = await _dispatch(agent, response.tool_calls)
            convo.tool_calls += len(results)
            convo.messages.append(ToolResultsMessage(results))
            continue
        convo.text = response.text
        if not agent.output_types:
            return
        check = check_output(response.text, agent.output_types)
        if check.ok:
            convo.outputs = check.outputs
            return
        convo.attempts.append({"text": response.text, "errors": list(check.errors)})
        if repairs >= settings.output_retries:
            raise _bad_output(agent.task, convo.attempts)
        repairs += 1
        convo.messages.append(UserMessage(repair_prompt(check.errors, agent.output_types)))


async def _call_model(
    agent: AgentPass, convo: Conversation, definitions: tuple[ToolDefinition, ...]
) -> ModelResponse:
    request = build_request(agent, tuple(convo.messages), definitions)
    with telemetry.chat_span(provider_name(agent.provider), request, convo) as span:
        response = await _answer(agent, convo, request)
        span.answered(response)
        return response


async def _answer(agent: AgentPass, convo: Conversation, request: ModelRequest) -> ModelResponse:
    """The answer to ``request``: from the journal when an earlier attempt paid for it."""
    if agent.journal is not None:
        replayed = await agent.journal.replay(request, provider_name(agent.provider))
        if replayed is not None:
            used = getattr(agent.provider, "answered_from_journal", None)
            if callable(used):  # a scripted provider moves past the reply the call used
                used(request)
            return await _replayed(agent, convo, replayed.response)
    if agent.ledger is not None:
        await _maybe_await(agent.ledger.before_call(agent.task))
    try:
        response = await agent.provider.complete(request)
    except ConfigError:  # no API key, no SDK, no model: the call was never made
        raise
    except Exception:
        # an attempt that failed (auth, rate limit, server error, ...) is still a model call:
        # counted, with no tokens (the provider reported none)
        convo.model_calls += 1
        failed = getattr(agent.ledger, "failed_call", None)
        if failed is not None:
            await _maybe_await(failed(agent.task))
        raise
    convo.model_calls += 1
    if agent.journal is not None:
        await agent.journal.record(response)
    (agent.logger or LOG).info(
        "model call %d: %d in / %d out tokens, %s",
        convo.model_calls + convo.replayed_calls,
        response.usage.input_tokens,
        response.usage.output_tokens,
        plural(len(response.tool_calls), "tool call"),
    )
    convo.usage = convo.usage + response.usage
    convo.model = response.model or convo.model or request.model
    if agent.ledger is not None:
        model = response.model or request.model
        cost = await _maybe_await(agent.ledger.after_call(agent.task, response.usage, model=model))
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            convo.cost += float(cost)
    return response


async def _replayed(
    agent: AgentPass, convo: Conversation, response: ModelResponse
) -> ModelResponse:
    """A journaled answer: free, outside every budget, counted apart from paid calls."""
    convo.replayed_calls += 1
    convo.replayed_usage = convo.replayed_usage + response.usage
    convo.model = response.model or convo.model
    (agent.logger or LOG).info(
        "model call %d: replayed from the journal (0 tokens paid), %s",
        convo.model_calls + convo.replayed_calls,
        plural(len(response.tool_calls), "tool call"),
    )
    note = getattr(agent.ledger, "replayed", None)
    if callable(note):
        await _maybe_await(note(agent.task, response.usage, model=response.model))
    return response


def build_request(
    agent: AgentPass, messages: tuple[Message, ...], tools: tuple[ToolDefinition, ...]
) -> ModelRequest:
    """The neutral request for the next call, with the task's model settings."""
    config = agent.task.provider.config if agent.task.provider is not None else None
    return ModelRequest(
        system=agent.system,
        messages=messages,
        tools=tools,
        model=config.model if config else None,
        temperature=config.temperature if config else None,
        max_tokens=config.max_tokens if config else None,
        output_schema=output_schema(agent.output_types),
        task_path=agent.task.path,
        task_name=agent.task.name,
        iteration=agent.iteration,
        options=dict(config.model_extra or {}) if config else {},
    )


async def _dispatch(agent: AgentPass, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
    """Run every call of one turn concurrently; answers come back in call order.

    A call of a ``replay: safe`` tool whose request was answered from the journal is answered
    from the journal too; every other tool call runs (its side effects happen again)."""
    safe = _replay_safe(agent)
    results = await asyncio.gather(
        *(_journaled_tool(agent, index, call, safe) for index, call in enumerate(calls))
    )
    return tuple(results)


def _replay_safe(agent: AgentPass) -> frozenset[str]:
    if agent.journal is None:
        return frozenset()
    return frozenset(
        spec.name for spec in agent.task.tools if str(spec.metadata.get("replay")) == "safe"
    )


async def _journaled_tool(
    agent: AgentPass, index: int, call: ToolCall, safe: frozenset[str]
) -> ToolResult:
    journal = agent.journal
    if journal is None or call.name not in safe:
        return await _call_tool(agent, call)
    result = await journal.replay_tool(index, call)
    if result is not None:
        note = getattr(agent.tools, "replayed", None)
        if callable(note):
            note(call, result)
        return result
    result = await _call_tool(agent, call)
    await journal.record_tool(index, call, result)
    return result


async def _call_tool(agent: AgentPass, call: ToolCall) -> ToolResult:
    if agent.tools is None:
        return ToolResult(call.id, call.name, f"unknown tool {call.name!r}: no tools", True)
    try:
        result = await agent.tools.call(call)
    except Exception as exc:  # Toolbox.call reports failures itself; this is a safety net
        if getattr(exc, "stops_pass", False):  # an approval nobody can give (FP530)
            raise
        (agent.logger or LOG).warning("tool %r raised: %s", call.name, exc)
        return ToolResult(call.id, call.name, f"tool {call.name!r} failed: {exc}", True)
    if result.call_id != call.id:
        result = ToolResult(call.id, result.name, result.content, result.is_error)
    return result


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _max_turns(task: Task, max_turns: int) -> MaxTurnsExceeded:
    return MaxTurnsExceeded(
        f"task {task.path or task.name!r}: the model was still calling tools after "
        f"{plural(max_turns, 'turn')} (settings.max_turns)",
        hint="raise settings.max_turns or simplify the task",
    )


def _bad_output(task: Task, attempts: list[dict[str, Any]]) -> OutputValidationError:
    lines = [
        f"task {task.path or task.name!r}: the answer did not match the declared output after "
        f"{plural(len(attempts), 'attempt')}:"
    ]
    for number, attempt in enumerate(attempts, 1):
        excerpt = " ".join(attempt["text"].split())  # one readable line, no repr escapes
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[:EXCERPT_CHARS] + "..."
        lines.append(f"  attempt {number}: {'; '.join(attempt['errors'])}")
        lines.append(f"    answer: {excerpt}")
    return OutputValidationError(
        "\n".join(lines), attempts, hint="make the instructions ask for the declared keys and types"
    )
