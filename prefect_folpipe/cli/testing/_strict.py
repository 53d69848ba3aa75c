"""Strict replay of a recorded case (``folpipe test`` on a ``recorded:`` case).

A recorded pass is the task's system prompt and its calls; each call is the messages added
since the previous answer (``request``), the fingerprint of the whole request (system prompt
and every message so far, normalised: secrets masked, the workflow's folder as ``<workflow>``,
tool-call ids left out) and the model's ``answer``. Replaying, each model request is
fingerprinted the same way: a request that differs fails the task (a ``bad_request`` provider
error, never retried) and the case, naming the task and showing the first differing part as a
unified diff. Answers come from the case; results of tools that are not ``replay: safe`` come
from the recorded requests, the safe ones run.
"""

from __future__ import annotations

import difflib
import json
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..._messages import ModelRequest, ModelResponse, message_to_dict
from ..._process.wording import plural
from ...errors import ProviderError
from ...providers.replay import Normalizer, fingerprint, response_from_record

STRIP = ("id", "call_id", "is_error")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if k not in STRIP}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def view(system: str, messages: Sequence[Mapping[str, Any]], normal: Normalizer) -> dict:
    """What a fingerprint covers: the system prompt and every message, normalised."""
    return {"system": normal.text(system or ""), "messages": _plain(normal.data(list(messages)))}


def request_fingerprint(view_data: Mapping[str, Any]) -> str:
    return fingerprint(dict(view_data))


def conversation(recorded: Mapping[str, Any], upto: int) -> list[dict[str, Any]]:
    """The messages of call ``upto``'s request, rebuilt from the recorded pass."""
    messages: list[dict[str, Any]] = []
    for index, call in enumerate(recorded.get("calls") or []):
        messages += list(call.get("request") or [])
        if index == upto:
            return messages
        answer = call.get("answer") or {}
        messages.append(
            {
                "role": "assistant",
                "text": answer.get("text", ""),
                "tool_calls": answer.get("tool_calls") or [],
            }
        )
    return messages


def explain(task: str, number: int, recorded: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """``task 'draft', model call 1: the request differs from the recorded one`` and the first
    differing part (system prompt or message) as a unified diff."""
    head = f"task {task!r}, model call {number}: the request differs from the recorded one"
    if recorded["system"] != now["system"]:
        return f"{head} (system prompt)\n{_diff(recorded['system'], now['system'])}"
    old, new = recorded["messages"], now["messages"]
    for index in range(max(len(old), len(new))):
        a = old[index] if index < len(old) else None
        b = new[index] if index < len(new) else None
        if a != b:
            return f"{head} (message {index + 1})\n{_diff(_text(a), _text(b))}"
    return head


def _text(message: Any) -> str:
    if message is None:
        return ""
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        return f"[{message.get('role')}]\n{message['content']}"
    return yaml.safe_dump(message, sort_keys=False, allow_unicode=True, width=100)


def _diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "recorded", "now", lineterm="", n=1
    )
    return "\n".join(lines)


@dataclass
class Replay:
    """The recorded passes of a case, handed out pass by pass as the tasks run."""

    passes: Mapping[str, Sequence[Mapping[str, Any]]]
    root: Path
    safe_tools: Mapping[str, frozenset[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    _left: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._left = {path: list(found) for path, found in self.passes.items()}
        self.normal = Normalizer(self.root)

    def take(self, path: str, phase: str, iteration: int | None) -> Mapping[str, Any] | None:
        left = self._left.get(path) or []
        for index, found in enumerate(left):
            scope = list(found.get("iteration") or [])
            same = (scope[-1] if scope else None) == iteration
            if found.get("phase", "single") == phase and same:
                return left.pop(index)
        return left.pop(0) if left else None

    def unused(self) -> Iterator[str]:
        for path, left in self._left.items():
            if left:
                yield f"task {path!r}: {plural(len(left), 'recorded pass')} never ran"

    def tool_stubs(self, path: str, recorded: Mapping[str, Any]) -> ToolQueue:
        """Results of the pass's recorded tool calls, tools that are not replay-safe."""
        safe = self.safe_tools.get(path, frozenset())
        queue = ToolQueue()
        for call in recorded.get("calls") or []:
            for message in call.get("request") or []:
                for result in message.get("results") or [] if message.get("role") == "tool" else []:
                    if result.get("name") not in safe:
                        queue.add(str(result.get("name")), str(result.get("content", "")))
        return queue


class ToolQueue(Mapping[str, Any]):
    """``tools.runtime.TOOL_STUBS`` over recorded results: each lookup of a tool takes its
    next recorded result (a tool with none left runs)."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[str]] = {}

    def add(self, name: str, content: str) -> None:
        self._queues.setdefault(name, deque()).append(content)

    def __contains__(self, name: object) -> bool:
        return bool(self._queues.get(str(name)))

    def __getitem__(self, name: str) -> str:
        queue = self._queues.get(name)
        if not queue:
            raise KeyError(name)
        return queue.popleft()

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, q in self._queues.items() if q])

    def __len__(self) -> int:
        return sum(1 for q in self._queues.values() if q)


class StrictProvider:
    """Answers one recorded pass, checking each request against the recorded fingerprint."""

    name = "recorded"
    supports_tools = True

    def __init__(self, replay: Replay, path: str, recorded: Mapping[str, Any] | None) -> None:
        self.replay = replay
        self.path = path
        self.recorded = recorded or {"system": "", "calls": []}
        self.calls = list(self.recorded.get("calls") or [])
        self.index = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        number = self.index + 1
        messages = [message_to_dict(m) for m in request.messages]
        now = view(request.system, messages, self.replay.normal)
        if self.index >= len(self.calls):
            return self._fail(f"task {self.path!r}: model call {number} was not recorded")
        call = self.calls[self.index]
        if request_fingerprint(now) != call.get("fingerprint"):
            system = str(self.recorded.get("system") or "")
            before = view(system, conversation(self.recorded, self.index), self.replay.normal)
            return self._fail(explain(self.path, number, before, now))
        self.index += 1
        return response_from_record(dict(call.get("answer") or {}))

    def _fail(self, message: str) -> ModelResponse:
        self.replay.failures.append(message)
        raise ProviderError(
            message.splitlines()[0],
            kind="bad_request",
            provider=self.name,
            code="FP182",
            hint="the workflow asks the model something else now: record the case again "
            "(folpipe test record) if the change is intended",
        )

    async def aclose(self) -> None:
        return None


def short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
