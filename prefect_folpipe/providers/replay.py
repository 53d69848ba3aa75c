"""Record real model calls into a cassette, and replay a cassette offline, deterministically.

``folpipe run --record FILE`` wraps every provider of the run in a ``RecordingProvider``: each
request and its answer (or its error) is stored under the task path and the task's turn index,
with a fingerprint of the request. ``--provider replay --replies FILE`` then answers every
call from the cassette; a request whose fingerprint differs from the recorded one is an error
that names the task, the turn and the first difference.

Cassettes are YAML (``.yaml`` / ``.yml``) or JSON (any other suffix). Secrets never reach
them: every request and answer is masked through the one redaction registry
(``workflow.redaction.SECRETS``: secret-looking environment variables, URL passwords, API keys
and Secret blocks resolved so far, even during the run), and the workflow's own folder is
written as ``<workflow>`` so a cassette replays from any checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import yaml

from .._messages import ModelRequest, ModelResponse, ToolCall, Usage, message_to_dict
from .._process.files import MAX_DATA_FILE, read_bounded
from .._process.wording import plural
from ..errors import ConfigError, ProviderError
from ..redaction import SECRETS
from ..workflow.config import ProviderConfig
from ..workflow.tree import Task
from ._sdk import provider_error
from .base import Provider

CASSETTE_VERSION = 1
WORKFLOW_PLACEHOLDER = "<workflow>"
REDACTED = "[REDACTED]"


class Normalizer:
    """Makes requests and answers portable and secret-free before they are stored or hashed.

    Secrets come from the redaction registry at the moment of writing (so a key resolved
    after the recorder was built is masked too), plus ``secrets`` given here."""

    def __init__(self, workflow_root: Path | None, secrets: Iterable[str] = ()) -> None:
        self.root = str(Path(workflow_root).resolve()) if workflow_root else None
        self.secrets = tuple(s for s in secrets if s)
        SECRETS.register(*self.secrets)

    @classmethod
    def from_environment(cls, workflow_root: Path | None) -> Normalizer:
        return cls(workflow_root)

    def with_secrets(self, extra: Iterable[str]) -> Normalizer:
        normalizer = Normalizer(None, [*self.secrets, *extra])
        normalizer.root = self.root
        return normalizer

    def text(self, value: str) -> str:
        value = SECRETS.text(value, extra=self.secrets)
        if self.root:
            value = value.replace(self.root, WORKFLOW_PLACEHOLDER)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def request_record(request: ModelRequest, normalizer: Normalizer) -> dict[str, Any]:
    """What identifies a request: prompt, conversation, tools, output schema (not the model)."""
    return normalizer.data(
        {
            "system": request.system,
            "messages": [message_to_dict(m) for m in request.messages],
            "tools": [
                {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                for t in request.tools
            ],
            "output_schema": dict(request.output_schema) if request.output_schema else None,
        }
    )


def fingerprint(record: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a request record."""
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def response_record(response: ModelResponse) -> dict[str, Any]:
    usage = response.usage
    return {
        "text": response.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
            for c in response.tool_calls
        ],
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "stop_reason": response.stop_reason,
        "model": response.model,
    }


def response_from_record(data: dict[str, Any]) -> ModelResponse:
    return ModelResponse(
        text=data.get("text") or "",
        tool_calls=tuple(
            ToolCall(c["id"], c["name"], dict(c.get("arguments") or {}))
            for c in data.get("tool_calls") or ()
        ),
        usage=Usage(**(data.get("usage") or {})),
        stop_reason=data.get("stop_reason"),
        model=data.get("model"),
    )


def _task_label(path: str) -> str:
    return repr(path) if path else "<root>"


class TurnCounter:
    """Turn index per task path, shared by every call of a run (retries and loops count)."""

    def __init__(self) -> None:
        self._turns: dict[str, int] = {}
        self._lock = threading.Lock()

    def next(self, task_path: str) -> int:
        with self._lock:
            turn = self._turns.get(task_path, 0)
            self._turns[task_path] = turn + 1
            return turn


class CassetteRecorder:
    """One per run: collects interactions and rewrites the cassette file after each one."""

    def __init__(self, path: Path, workflow_root: Path | None = None) -> None:
        self.path = Path(path)
        self.normalizer = Normalizer.from_environment(workflow_root)
        self.turns = TurnCounter()
        self._entries: list[dict[str, Any]] = []
        self._providers: set[str] = set()
        self._lock = threading.Lock()

    def wrap(self, provider: Provider) -> RecordingProvider:
        """A provider that records every call of ``provider`` into this cassette."""
        return RecordingProvider(provider, self)

    def add(self, entry: dict[str, Any], provider: str) -> None:
        with self._lock:
            self._entries.append(entry)
            self._providers.add(provider)
            self._write()

    def _write(self) -> None:
        entries = sorted(self._entries, key=lambda e: (e["task"], e["turn"]))
        document = {
            "version": CASSETTE_VERSION,
            "providers": sorted(self._providers),
            "interactions": entries,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cassette-", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            if _is_yaml(self.path):
                yaml.safe_dump(document, stream, sort_keys=False, allow_unicode=True, width=100)
            else:
                json.dump(document, stream, indent=2, ensure_ascii=False)
                stream.write("\n")
        os.replace(tmp, self.path)


class RecordingProvider:
    """Wraps a real provider; stores each request with its answer or error in a cassette."""

    name: ClassVar[str] = "recording"

    def __init__(self, inner: Provider, recorder: CassetteRecorder) -> None:
        self.inner = inner
        self.recorder = recorder
        self.supports_tools = getattr(inner, "supports_tools", True)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turn = self.recorder.turns.next(request.task_path)
        secrets = [s for s in getattr(self.inner, "secret_values", ()) if s]
        normalizer = self.recorder.normalizer.with_secrets(secrets)
        record = request_record(request, normalizer)
        entry: dict[str, Any] = {
            "task": request.task_path,
            "turn": turn,
            "fingerprint": fingerprint(record),
            "request": record,
        }
        provider = str(getattr(self.inner, "name", type(self.inner).__name__))
        try:
            response = await self.inner.complete(request)
        except ProviderError as exc:
            entry["error"] = {"kind": exc.kind, "message": normalizer.text(str(exc))}
            self.recorder.add(entry, provider)
            raise
        entry["response"] = normalizer.data(response_record(response))
        self.recorder.add(entry, provider)
        return response

    async def check_capabilities(self, task: Task) -> None:
        check = getattr(self.inner, "check_capabilities", None)
        if check is not None:
            await check(task)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def load_cassette(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Interactions of a cassette keyed by (task path, turn)."""
    try:
        text = read_bounded(path, MAX_DATA_FILE).decode("utf-8")
        document = yaml.safe_load(text) if _is_yaml(path) else json.loads(text)
    except FileNotFoundError:
        raise ConfigError(
            f"replay cassette {str(path)!r} does not exist",
            code="FP327",
            hint="record one first: folpipe run PATH --record CASSETTE",
        ) from None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"replay cassette {str(path)!r} cannot be read: {exc}",
            code="FP327",
            hint="re-record it with --record",
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        raise ConfigError(
            f"replay cassette {str(path)!r} has no `interactions` list",
            code="FP327",
            hint="re-record it with --record",
        )
    return {(str(e.get("task", "")), int(e.get("turn", 0))): e for e in document["interactions"]}


def _turn_hashes(interactions: dict[tuple[str, int], dict[str, Any]]) -> dict[str, str]:
    """Per task path, the hash of its recorded turns in turn order."""
    by_task: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for (path, turn), entry in interactions.items():
        by_task.setdefault(path, []).append((turn, entry))
    return {path: _turn_hash(turns) for path, turns in by_task.items()}


def _turn_hash(turns: list[tuple[int, dict[str, Any]]]) -> str:
    text = json.dumps(sorted(turns, key=lambda item: item[0]), sort_keys=True, default=repr)
    return "cassette:" + hashlib.sha256(text.encode()).hexdigest()[:32]


class ReplayProvider:
    """Answers every call from a recorded cassette; no network, same answers every time."""

    name: ClassVar[str] = "replay"
    supports_tools: bool = True

    def __init__(
        self,
        config: ProviderConfig,
        *,
        secret_resolver: Any = None,
        workflow_root: Path | None = None,
        cassette: Path | None = None,
    ) -> None:
        source = cassette or (Path(config.replies) if config.replies else None)
        if source is None:
            raise ConfigError(
                "the replay provider needs a cassette",
                code="FP327",
                hint="pass --replies CASSETTE (or FOLPIPE_REPLIES), or set `replies:` in the "
                "replay provider block",
            )
        if not source.is_absolute() and workflow_root is not None and not source.exists():
            source = Path(workflow_root) / source
        self.cassette = source
        self._interactions = load_cassette(source)
        self._normalizer = Normalizer.from_environment(workflow_root)
        self._turns = TurnCounter()
        self._identities: dict[str, str] | None = None

    @classmethod
    def from_config(cls, config: ProviderConfig, env: Any) -> ReplayProvider:
        """Registry hook: ``env.replies`` (``--replies``) wins over the block's ``replies``."""
        return cls(config, workflow_root=env.workflow_root, cassette=env.replies)

    async def check_capabilities(self, task: Task) -> None:
        return None

    def checkpoint_identity(self, task: Task) -> str:
        """sha256 of the recorded turns of ``task``: part of its checkpoint key, so a
        re-recorded or edited cassette re-runs the tasks whose turns changed. All tasks' are
        hashed at the first call (one pass over the cassette, not one per task)."""
        if self._identities is None:
            self._identities = _turn_hashes(self._interactions)
        return self._identities.get(task.path) or _turn_hash([])

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turn = self._turns.next(request.task_path)
        where = f"task {_task_label(request.task_path)} turn {turn}"
        entry = self._interactions.get((request.task_path, turn))
        if entry is None:
            recorded = sum(1 for task, _ in self._interactions if task == request.task_path)
            raise self._error(
                f"replay: {where} is not in the cassette {self.cassette.name!r} "
                f"(it has {plural(recorded, 'turn')} for this task)",
                code="FP329",
            )
        record = request_record(request, self._normalizer)
        if fingerprint(record) != entry.get("fingerprint"):
            difference = first_difference(entry.get("request") or {}, record)
            raise self._error(
                f"replay: the request of {where} does not match the cassette "
                f"{self.cassette.name!r}: {difference}",
                code="FP328",
            )
        if "error" in entry:
            error = entry["error"]
            raise provider_error(
                f"(replayed) {error.get('message', '')}",
                kind=error.get("kind", "server_error"),
                provider=self.name,
            )
        return response_from_record(entry.get("response") or {})

    def _error(self, message: str, *, code: str) -> ProviderError:
        return provider_error(message, kind="bad_request", provider=self.name, code=code)

    async def aclose(self) -> None:
        return None


def first_difference(recorded: dict[str, Any], current: dict[str, Any]) -> str:
    """Where a request differs from the recorded one, in words (for mismatch errors)."""
    for key in ("system", "tools", "output_schema"):
        if recorded.get(key) != current.get(key):
            return f"the {key.replace('_', ' ')} differs"
    old, new = recorded.get("messages") or [], current.get("messages") or []
    for index, (before, now) in enumerate(zip(old, new, strict=False)):
        if before != now:
            return (
                f"message {index + 1} ({now.get('role')}) differs: recorded "
                f"{_snippet(before)}, now {_snippet(now)}"
            )
    if len(old) != len(new):
        return f"the conversation has {plural(len(new), 'message')}, the recording {len(old)}"
    return "the fingerprint differs (the cassette was edited?)"


def _snippet(message: dict[str, Any], limit: int = 120) -> str:
    text = json.dumps({k: v for k, v in message.items() if k != "role"}, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
