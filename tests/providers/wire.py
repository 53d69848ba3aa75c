"""Local servers speaking the Anthropic, OpenAI and Ollama wire protocols on 127.0.0.1.

Each server answers from a queue of neutral replies (``Reply``, ``Failure``, ``Stall``) and
keeps every request body it received, so a test drives the real SDK end to end and then checks
exactly what went over the wire.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response


@dataclass
class Reply:
    """A successful model answer."""

    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """(id, name, arguments) of each tool call."""
    usage: tuple[int, int, int, int] = (10, 5, 0, 0)
    """input, output, cache read, cache write tokens."""
    stop: str | None = None
    """Override the wire stop reason (e.g. ``max_tokens``, ``refusal``)."""


@dataclass
class Failure:
    """An HTTP error answer."""

    status: int
    message: str = "failed"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Stall:
    """Answer only after ``seconds`` (longer than the client's timeout)."""

    seconds: float


class WireServer:
    """Base: a POST endpoint answering from a queue; subclasses render the wire format."""

    path = "/"

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.queue: list[Reply | Failure | Stall] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server.expect_request(self.path, method="POST").respond_with_handler(self._handle)

    def add(self, *replies: Reply | Failure | Stall) -> None:
        self.queue.extend(replies)

    @property
    def base_url(self) -> str:
        return self.server.url_for("").rstrip("/")

    def _handle(self, request: Request) -> Response:
        self.requests.append(json.loads(request.get_data(as_text=True)))
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        reply = self.queue.pop(0) if self.queue else Reply(text="(queue empty)")
        if isinstance(reply, Stall):
            time.sleep(reply.seconds)
            return self._json(self.render(Reply(text="too late")))
        if isinstance(reply, Failure):
            return self._json(self.error_body(reply), reply.status, reply.headers)
        return self._json(self.render(reply))

    @staticmethod
    def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        return Response(
            json.dumps(body), status=status, headers=headers, content_type="application/json"
        )

    def render(self, reply: Reply) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, failure: Failure) -> dict[str, Any]:
        return {"error": {"message": failure.message, "type": "error"}}


class AnthropicWire(WireServer):
    """``POST /v1/messages`` (Messages API)."""

    path = "/v1/messages"

    def render(self, reply: Reply) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content.extend(
            {"type": "tool_use", "id": cid, "name": name, "input": args}
            for cid, name, args in reply.tool_calls
        )
        stop = reply.stop or ("tool_use" if reply.tool_calls else "end_turn")
        inp, out, read, write = reply.usage
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": self.requests[-1]["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": inp,
                "output_tokens": out,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
            },
        }

    def error_body(self, failure: Failure) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": failure.message}}


class OpenAIWire(WireServer):
    """``POST /v1/chat/completions`` (Chat Completions API)."""

    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return self.server.url_for("/v1")

    def render(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for cid, name, args in reply.tool_calls
            ]
        if reply.stop == "refusal":
            message["refusal"] = "I can't help with that."
        finish = {"max_tokens": "length", "refusal": "stop"}.get(reply.stop or "", reply.stop)
        finish = finish or ("tool_calls" if reply.tool_calls else "stop")
        inp, out, read, _ = reply.usage
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.requests[-1]["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": inp,
                "completion_tokens": out,
                "total_tokens": inp + out,
                "prompt_tokens_details": {"cached_tokens": read},
            },
        }


class OllamaWire(WireServer):
    """``POST /api/chat`` plus ``POST /api/show`` (native Ollama API)."""

    path = "/api/chat"

    def __init__(self, server: HTTPServer, *, capabilities: list[str] | None = None) -> None:
        super().__init__(server)
        self.capabilities = capabilities if capabilities is not None else ["completion", "tools"]
        server.expect_request("/api/show", method="POST").respond_with_handler(self._show)

    def _show(self, request: Request) -> Response:
        body = json.loads(request.get_data(as_text=True))
        if body.get("model") == "missing":
            return self._json({"error": "model 'missing' not found"}, 404)
        return self._json(
            {"capabilities": self.capabilities, "template": "{{ .Prompt }}", "model_info": {}}
        )

    def render(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"function": {"name": name, "arguments": args}}
                for _, name, args in reply.tool_calls
            ]
        inp, out, _, _ = reply.usage
        return {
            "model": self.requests[-1]["model"],
            "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": {"max_tokens": "length"}.get(reply.stop or "", "stop"),
            "prompt_eval_count": inp,
            "eval_count": out,
        }

    def error_body(self, failure: Failure) -> dict[str, Any]:
        return {"error": failure.message}
