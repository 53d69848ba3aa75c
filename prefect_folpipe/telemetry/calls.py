"""The spans inside a pass: ``chat`` per model call, ``execute_tool`` per tool call, hooks
and approval gates (imported only once a tracer exists: see ``setup``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.trace import Span, SpanKind

from . import content
from .spans import OPERATION, open_span, set_attributes
from .state import PassInfo


class ChatTrace:
    """The ``chat`` span of one model call; ``answered`` fills in what came back."""

    def __init__(self, span: Span, convo: Any) -> None:
        self.span = span
        self.convo = convo
        self.replayed_before = getattr(convo, "replayed_calls", 0)
        self.cost_before = getattr(convo, "cost", 0.0)

    def answered(self, response: Any) -> None:
        replayed = getattr(self.convo, "replayed_calls", 0) > self.replayed_before
        usage = response.usage
        attributes: dict[str, Any] = {
            "gen_ai.response.model": response.model,
            "gen_ai.response.finish_reasons": [response.stop_reason or "stop"],
            "gen_ai.usage.input_tokens": 0 if replayed else usage.input_tokens,
            "gen_ai.usage.output_tokens": 0 if replayed else usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": 0 if replayed else usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": (
                0 if replayed else usage.cache_write_tokens
            ),
            "folpipe.replayed": replayed,
            "folpipe.cost_usd": max(0.0, getattr(self.convo, "cost", 0.0) - self.cost_before),
            "folpipe.tool_calls": len(response.tool_calls),
        }
        if replayed:  # what the journaled answer once cost; nothing is paid now
            attributes["folpipe.replayed.input_tokens"] = usage.input_tokens
            attributes["folpipe.replayed.output_tokens"] = usage.output_tokens
        if content.capture_enabled():
            attributes["gen_ai.output.messages"] = content.output_messages(
                response.text, response.tool_calls, response.stop_reason
            )
        set_attributes(self.span, attributes)


@contextmanager
def chat_span(
    tracer: Any, info: PassInfo, provider: str, request: Any, convo: Any
) -> Iterator[ChatTrace]:
    model = request.model
    attributes: dict[str, Any] = {
        OPERATION: "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.request.temperature": request.temperature,
        "gen_ai.request.max_tokens": request.max_tokens,
        "gen_ai.output.type": "json" if request.output_schema else "text",
        "folpipe.task.path": info.path,
        "folpipe.pass": info.phase,
        "folpipe.attempt": info.attempt,
        "folpipe.call": getattr(convo, "model_calls", 0) + getattr(convo, "replayed_calls", 0) + 1,
    }
    if content.capture_enabled():
        attributes["gen_ai.system_instructions"] = content.instructions(request.system)
        attributes["gen_ai.input.messages"] = content.input_messages(request.messages)
    name = f"chat {model}" if model else "chat"
    with open_span(tracer, name, attributes, kind=SpanKind.CLIENT) as span:
        yield ChatTrace(span, convo)


class ToolTrace:
    """The ``execute_tool`` span of one tool call; ``done`` records its outcome."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def done(
        self, result: str, is_error: bool, *, code: str | None, attempts: int, duration_s: float
    ) -> None:
        attributes: dict[str, Any] = {
            "folpipe.tool.outcome": "error" if is_error else "ok",
            "folpipe.tool.attempts": attempts,
            "folpipe.tool.duration_s": duration_s,
            "error.type": code if is_error else None,
        }
        if content.capture_enabled():
            attributes["gen_ai.tool.call.result"] = result[: content.MAX_CHARS]  # masked when set
        set_attributes(self.span, attributes)


@contextmanager
def tool_span(
    tracer: Any, info: PassInfo, call: Any, kind: str | None, *, replayed: bool = False
) -> Iterator[ToolTrace]:
    attributes: dict[str, Any] = {
        OPERATION: "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "folpipe.tool.kind": kind or "unknown",
        "folpipe.task.path": info.path,
        "folpipe.attempt": info.attempt,
        "folpipe.replayed": replayed,
    }
    if content.capture_enabled():
        attributes["gen_ai.tool.call.arguments"] = content.masked_json(call.arguments)
    with open_span(tracer, f"execute_tool {call.name}", attributes) as span:
        yield ToolTrace(span)


@contextmanager
def hook_span(tracer: Any, info: PassInfo, stage: str, kind: str) -> Iterator[None]:
    attributes = {
        "folpipe.operation": "hook",
        "folpipe.hook.stage": stage,
        "folpipe.hook.kind": kind,
        "folpipe.task.path": info.path,
    }
    with open_span(tracer, f"hook {stage}", attributes):
        yield


class GateTrace:
    """The span of an approval gate; ``answered`` says where its answer came from."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def answered(self, source: str) -> None:
        set_attributes(self.span, {"folpipe.approval.source": source})


@contextmanager
def approval_span(tracer: Any, path: str, label: str) -> Iterator[GateTrace]:
    attributes = {
        "folpipe.operation": "approval",
        "folpipe.task.path": path,
        "folpipe.task.label": label,
    }
    with open_span(tracer, f"approval {label}", attributes) as span:
        yield GateTrace(span)
