"""The offline ``scripted`` provider: canned answers from a replies file (docs/providers.md).

```yaml
tasks:
  review_cv:                       # task path first, then task name
    - {output: {approved: true}}   # sent as a fenced JSON block
  fetch_data:
    - tool_calls: [{name: search_api, arguments: {query: prefect}}]
    - "Plain final text"
  flaky:
    - error: rate_limit            # raises ProviderError(kind="rate_limit")
    - {echo: true, delay: 0.2}     # the request as text, after 0.2 s
default: "ok"                      # any task not listed (one entry or a list)
latency_s: 0.05                    # every reply waits this long (asynchronously)
```

Each task consumes its own list, one entry per model call; the last entry repeats. The cursor
lives in the provider instance, which the provider pool shares for the whole run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, get_args

import yaml

from .._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from .._process.files import MAX_DATA_FILE, read_bounded
from .._process.wording import noun
from ..errors import ConfigError, ProviderError, ProviderErrorKind
from ..workflow.jsondata import NotPlainJSON, check_plain, load_yaml

ERROR_KINDS: tuple[str, ...] = get_args(ProviderErrorKind)
ENTRY_KEYS = frozenset({"text", "output", "tool_calls", "error", "message", "echo", "delay"})
TOP_LEVEL_KEYS = frozenset({"tasks", "default", "latency_s"})
CHARS_PER_TOKEN = 4
MAX_DELAY_S = 3600.0
"""Longest ``latency_s`` / ``delay`` a replies file may ask for (``.inf`` would hang a run)."""
REPLIES_HINT = (
    "see the replies-file format in docs/providers.md: `tasks: {name: [entries]}`, `default:`; "
    "an entry is a string, {output: {...}}, {tool_calls: [...]}, {error: kind} or {echo: true}"
)


@dataclass(frozen=True)
class ScriptedReply:
    """One normalised entry of a replies file."""

    text: str = ""
    output: Any = None
    has_output: bool = False
    tool_calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    error: str | None = None
    error_message: str | None = None
    echo: bool = False
    delay: float = 0.0


@dataclass(frozen=True)
class ReplyScript:
    """A validated replies file: per-task entry lists and the default list."""

    tasks: Mapping[str, tuple[ScriptedReply, ...]] = field(default_factory=dict)
    default: tuple[ScriptedReply, ...] = ()
    latency_s: float = 0.0
    source: str = "<replies>"


class RepliesFileError(ConfigError):
    """A replies file that cannot be used (FP305), with the file and a hint."""

    def __init__(self, message: str, *, source: str, code: str = "FP305") -> None:
        super().__init__(f"{source}: {message}", code=code, hint=REPLIES_HINT)
        self.file = source


def load_replies(path: str | Path) -> ReplyScript:
    """Read and validate a replies file (YAML or JSON); raise ``RepliesFileError`` if unusable."""
    file = Path(path)
    try:
        data = read_bounded(file, MAX_DATA_FILE)
    except OSError as exc:
        raise RepliesFileError(
            f"cannot read replies file: {exc.strerror or exc}", source=str(file), code="FP304"
        ) from None
    raw = data.decode("utf-8")
    try:
        data = load_yaml(raw, "the replies file")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise RepliesFileError(f"not valid YAML{where}: {exc}", source=str(file)) from None
    except NotPlainJSON as exc:
        raise RepliesFileError(
            f"only JSON-like data is allowed (strings, numbers, lists, mappings): {exc}",
            source=str(file),
        ) from None
    return parse_replies(data, source=str(file))


def parse_replies(data: Any, *, source: str = "<replies>") -> ReplyScript:
    """Validate the parsed content of a replies file."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise RepliesFileError("the top level must be a mapping", source=source)
    try:
        check_plain(data, "replies")
    except NotPlainJSON as exc:
        raise RepliesFileError(f"only JSON-like data is allowed: {exc}", source=source) from None
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise RepliesFileError(
            f"unknown top-level {noun(len(unknown), 'key')} {unknown}; allowed: tasks, default, "
            "latency_s",
            source=source,
        )
    tasks = data.get("tasks") or {}
    if not isinstance(tasks, Mapping):
        raise RepliesFileError("`tasks` must map task names or paths to entries", source=source)
    parsed = {
        str(key): _parse_entries(value, where=f"tasks.{key}", source=source)
        for key, value in tasks.items()
    }
    default: tuple[ScriptedReply, ...] = ()
    if data.get("default") is not None:
        default = _parse_entries(data["default"], where="default", source=source)
    return ReplyScript(
        tasks=parsed,
        default=default,
        latency_s=_number(data.get("latency_s", 0.0), where="latency_s", source=source),
        source=source,
    )


def _parse_entries(value: Any, *, where: str, source: str) -> tuple[ScriptedReply, ...]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise RepliesFileError(f"{where}: the list of entries is empty", source=source)
    return tuple(
        _parse_entry(item, where=f"{where}[{index}]", source=source)
        for index, item in enumerate(items)
    )


def _parse_entry(item: Any, *, where: str, source: str) -> ScriptedReply:
    if isinstance(item, str):
        return ScriptedReply(text=item)
    if not isinstance(item, Mapping):
        raise RepliesFileError(
            f"{where}: an entry must be a string or a mapping, got {type(item).__name__}",
            source=source,
        )
    unknown = sorted(set(item) - ENTRY_KEYS)
    if unknown:
        raise RepliesFileError(
            f"{where}: unknown {noun(len(unknown), 'key')} {unknown}; "
            f"allowed: {sorted(ENTRY_KEYS)}",
            source=source,
        )
    error = item.get("error")
    if error is not None and error not in ERROR_KINDS:
        raise RepliesFileError(
            f"{where}: error must be one of {', '.join(ERROR_KINDS)}, got {error!r}", source=source
        )
    text = item.get("text", "")
    if not isinstance(text, str):
        raise RepliesFileError(f"{where}: text must be a string", source=source)
    if not (error or item.get("echo") or "output" in item or "tool_calls" in item or text):
        raise RepliesFileError(
            f"{where}: an entry needs one of text, output, tool_calls, error or echo",
            source=source,
        )
    return ScriptedReply(
        text=text,
        output=item.get("output"),
        has_output="output" in item,
        tool_calls=_parse_tool_calls(item.get("tool_calls"), where=where, source=source),
        error=error,
        error_message=str(item["message"]) if item.get("message") is not None else None,
        echo=bool(item.get("echo", False)),
        delay=_number(item.get("delay", 0.0), where=f"{where}.delay", source=source),
    )


def _parse_tool_calls(
    value: Any, *, where: str, source: str
) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise RepliesFileError(f"{where}: tool_calls must be a non-empty list", source=source)
    calls = []
    for index, call in enumerate(value):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise RepliesFileError(
                f"{where}.tool_calls[{index}]: each call needs a `name` (and `arguments`)",
                source=source,
            )
        arguments = call.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise RepliesFileError(
                f"{where}.tool_calls[{index}]: arguments must be a mapping", source=source
            )
        calls.append((call["name"], dict(arguments)))
    return tuple(calls)


def _number(value: Any, *, where: str, source: str) -> float:
    """A delay in seconds: a finite number from 0 to ``MAX_DELAY_S``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_DELAY_S  # also false for NaN
    ):
        raise RepliesFileError(
            f"{where} must be a number of seconds from 0 to {MAX_DELAY_S:g}, got {value!r}",
            source=source,
        )
    return float(value)


def render_request(request: ModelRequest) -> str:
    """The request as text: the system prompt, then every message (what ``echo`` answers)."""
    parts = [f"[system]\n{request.system}"]
    parts.extend(_render_message(message) for message in request.messages)
    return "\n\n".join(parts)


def _render_message(message: Message) -> str:
    if isinstance(message, UserMessage):
        return f"[user]\n{message.content}"
    if isinstance(message, AssistantMessage):
        lines = [f"[assistant]\n{message.text}".rstrip("\n")]
        lines.extend(
            f"[tool_call {call.id}] {call.name} {json.dumps(dict(call.arguments), sort_keys=True)}"
            for call in message.tool_calls
        )
        return "\n".join(lines)
    assert isinstance(message, ToolResultsMessage)
    return "\n".join(
        f"[tool_result {r.call_id}{' error' if r.is_error else ''}] {r.name}\n{r.content}"
        for r in message.results
    )


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one token per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class ScriptedProvider:
    """Answers each model call with the next entry of its task's list in the replies file."""

    name: ClassVar[str] = "scripted"
    supports_tools: bool = True

    def __init__(
        self,
        script: ReplyScript | Mapping[str, Any] | str | Path | None = None,
        *,
        latency_s: float | None = None,
        model: str | None = None,
    ) -> None:
        if script is None:
            script = ReplyScript(default=(ScriptedReply(text="ok"),))
        elif isinstance(script, str | Path):
            script = load_replies(script)
        elif not isinstance(script, ReplyScript):
            script = parse_replies(script)
        self.script = script
        self.latency_s = script.latency_s if latency_s is None else latency_s
        self.model = model or "scripted"
        self._cursors: dict[str, int] = {}
        self._lock = threading.Lock()
        self._identities: dict[tuple[str, str], str] = {}

    @classmethod
    def from_config(cls, config: Any, env: Any) -> ScriptedProvider:
        """Build from a provider block (``replies:`` relative to the workflow root)."""
        replies = getattr(env, "replies", None) or getattr(config, "replies", None)
        if replies is None:
            raise ConfigError(
                f"provider {getattr(env, 'name', 'scripted')!r}: the scripted provider needs a "
                "replies file",
                code="FP304",
                hint="add `replies: replies.yaml` to the provider block or pass --replies FILE",
            )
        path = Path(replies)
        root = getattr(env, "workflow_root", None)
        if not path.is_absolute() and root is not None and getattr(env, "replies", None) is None:
            path = Path(root) / path
        return cls(path, model=getattr(config, "model", None))

    def entries_for(self, task_path: str, task_name: str) -> tuple[ScriptedReply, ...]:
        """The entry list of a task: its path first, then its name, then ``default``."""
        for key in (task_path, task_name):
            if key in self.script.tasks:
                return self.script.tasks[key]
        if self.script.default:
            return self.script.default
        raise ConfigError(
            f"{self.script.source}: no replies for task {task_path or task_name!r} and no default",
            code="FP306",
            hint=f"add `tasks: {{{task_name}: [...]}}` or a `default:` entry to the replies file",
        )

    def checkpoint_identity(self, task: Any) -> str:
        """sha256 of the entries that answer ``task`` (its list, or ``default``): part of its
        checkpoint key, so editing them re-runs the task and editing another task's does not.
        Hashed once per task: the script never changes once loaded."""
        found = self._identities.get((task.path, task.name))
        if found is None:
            found = self._identities[(task.path, task.name)] = self._identity(task)
        return found

    def _identity(self, task: Any) -> str:
        try:
            entries = self.entries_for(task.path, task.name)
        except ConfigError:
            return "no-replies"
        data = [dataclasses.asdict(entry) for entry in entries]
        text = json.dumps(data, sort_keys=True, default=repr)
        return "replies:" + hashlib.sha256(text.encode()).hexdigest()[:32]

    def next_entry(self, task_path: str, task_name: str, at_least: int = 0) -> ScriptedReply:
        """Advance this task's cursor; the last entry repeats.

        ``at_least`` is the index of the call in its conversation: the cursor never lags
        behind it, so when earlier answers came from the journal (a resumed pass) the next
        live call gets the entry the uninterrupted run would have got."""
        entries = self.entries_for(task_path, task_name)
        with self._lock:
            index = max(self._cursors.get(task_path, 0), at_least)
            self._cursors[task_path] = index + 1
        return entries[min(index, len(entries) - 1)]

    def answered_from_journal(self, request: ModelRequest) -> None:
        """A call the journal answered uses up its entry, as the live call it replays did, so a
        later pass of the task (a loop's next iteration, after a resume) gets the entry the
        uninterrupted run's got."""
        self.next_entry(request.task_path, request.task_name, _call_number(request) - 1)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        entry = self.next_entry(request.task_path, request.task_name, _call_number(request) - 1)
        wait = self.latency_s + entry.delay
        if wait:
            await asyncio.sleep(wait)
        if entry.error:
            kind: Any = entry.error
            message = entry.error_message or f"scripted {entry.error} error"
            raise ProviderError(message, kind=kind, provider=self.name)
        text = render_request(request) if entry.echo else _reply_text(entry)
        calls = tuple(
            ToolCall(
                id=f"call_{request.task_name or 'task'}_{_call_number(request)}_{i}",
                name=name,
                arguments=arguments,
            )
            for i, (name, arguments) in enumerate(entry.tool_calls)
        )
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=Usage(_request_tokens(request), _response_tokens(text, calls)),
            stop_reason="tool_use" if calls else "end_turn",
            model=request.model or self.model,
        )

    async def aclose(self) -> None:
        return None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _reply_text(entry: ScriptedReply) -> str:
    if not entry.has_output:
        return entry.text
    block = f"```json\n{json.dumps(entry.output, indent=2, ensure_ascii=False)}\n```"
    return f"{entry.text}\n\n{block}" if entry.text else block


def _call_number(request: ModelRequest) -> int:
    return sum(isinstance(m, AssistantMessage) for m in request.messages) + 1


def _request_tokens(request: ModelRequest) -> int:
    tokens = estimate_tokens(render_request(request))
    if request.tools:
        described = [{"name": t.name, "description": t.description} for t in request.tools]
        tokens += estimate_tokens(json.dumps(described, sort_keys=True))
    return tokens


def _response_tokens(text: str, calls: Sequence[ToolCall]) -> int:
    payload = json.dumps([[c.name, dict(c.arguments)] for c in calls]) if calls else ""
    return estimate_tokens(text + payload)
