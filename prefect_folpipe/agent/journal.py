"""The journal of one agent pass: model answers (and ``replay: safe`` tool results) kept in the
run's result store, so a retry or a resume answers the calls it already paid for from it.

An answer is stored under the **fingerprint** of the request that produced it: the provider,
the model, the system prompt, every message, the tool schemas and the settings that change the
answer (temperature, max_tokens, the output schema, provider options). Volatile fields (the
task's path and name, time-outs, endpoints) stay out, and secrets and the workflow's folder are
masked before hashing, so a journal resumes from another checkout. The store is content
addressed: one small entry per answer, never the conversation again, so the bytes written grow
with the conversation, not with its square. Each message is hashed once per pass.

Replay stops at the first request without an entry: that call and every later one go live
(and are journaled), even if a later request happens to match an old entry.

The store is whatever ``compile/`` supplies (:class:`JournalStore`): files under the result
storage folder, or a Prefect storage block; the agent never imports Prefect.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .._messages import Message, ModelRequest, ModelResponse, ToolCall, ToolResult, message_to_dict
from .._process.stored import DamagedEntry, load_stored, warn_damaged
from ..providers.replay import Normalizer, response_from_record, response_record
from ..redaction import is_secret_name
from ..workflow.names import slug

LOG = logging.getLogger("prefect_folpipe.agent")
JOURNAL_VERSION = 1
VOLATILE_OPTIONS = frozenset(
    {
        "timeout",
        "base_url",
        "max_retries",
        "default_headers",
        "extra_headers",
        "organization",
        "project",
        "user",
        "metadata",
    }
)
"""Provider options that never change an answer (endpoints, time-outs, bookkeeping)."""


class JournalStore(Protocol):
    """Where journal entries live (``compile/`` supplies one over the run's result storage).

    ``read`` returns ``None`` for a key that is not there; neither method should raise for an
    unreachable store (the journal then just misses and goes live).
    """

    async def read(self, key: str) -> bytes | None: ...

    async def write(self, key: str, data: bytes) -> None: ...


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Replayed:
    """A model answer that came from the journal."""

    response: ModelResponse
    fingerprint: str


class Journal:
    """The journal of one agent pass (one task, phase and loop iteration).

    ``run`` names the run writing the entries (its checkpoint lineage, which a resume
    continues); with ``only_run`` set (``--fresh``), entries of other runs are ignored, so a
    fresh run asks the model again but its own retries and resumes still replay.
    """

    def __init__(
        self,
        store: JournalStore,
        task_path: str,
        namespace: str = "",
        *,
        workflow_root: Path | str | None = None,
        run: str = "",
        only_run: bool = False,
        secrets: Iterable[str] = (),
    ) -> None:
        self.store = store
        self.prefix = f"journal/{slug(task_path or 'root')}/{_digest(namespace)[:16]}"
        self.run = run
        self.only_run = only_run
        self._masker = Normalizer.from_environment(
            Path(workflow_root) if workflow_root else None
        ).with_secrets(secrets)
        self._secrets_only = Normalizer(None, self._masker.secrets)
        self._chain: list[tuple[Message, str]] = []
        self._live = False
        self.last_fingerprint = ""
        self.last_replayed = False

    # -- model calls ---------------------------------------------------------------------------

    def fingerprint(self, request: ModelRequest, provider: str) -> str:
        """The content address of ``request`` (messages already seen are not hashed again)."""
        header = {
            "v": JOURNAL_VERSION,
            "provider": provider,
            "model": request.model,
            "system": self._masker.text(request.system),
            "tools": [
                {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                for t in request.tools
            ],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "output_schema": dict(request.output_schema) if request.output_schema else None,
            "options": self._masker.data(_answer_options(request.options)),
        }
        digests = [_digest(_canonical(header)), *self._message_digests(request.messages)]
        return _digest("".join(digests))

    def _message_digests(self, messages: tuple[Message, ...]) -> list[str]:
        digests = []
        for index, message in enumerate(messages):
            if index < len(self._chain) and self._chain[index][0] is message:
                digests.append(self._chain[index][1])
                continue
            digest = _digest(_canonical(self._masker.data(message_to_dict(message))))
            del self._chain[index:]
            self._chain.append((message, digest))
            digests.append(digest)
        return digests

    async def replay(self, request: ModelRequest, provider: str) -> Replayed | None:
        """The journaled answer to ``request``, or ``None`` (this call and the rest go live)."""
        fingerprint = self.fingerprint(request, provider)
        self.last_fingerprint = fingerprint
        self.last_replayed = False
        if self._live:
            return None
        entry = await self._read(f"{self.prefix}/{fingerprint}.json")
        response = _response_of(entry)
        if response is None:
            self._live = True
            return None
        self.last_replayed = True
        return Replayed(response, fingerprint)

    async def record(self, response: ModelResponse) -> None:
        """Keep the live answer to the request last looked up (secrets masked)."""
        if not self.last_fingerprint:
            return
        entry = {"v": JOURNAL_VERSION, "run": self.run, "response": response_record(response)}
        await self._write(f"{self.prefix}/{self.last_fingerprint}.json", entry)

    # -- tool calls of ``replay: safe`` tools ----------------------------------------------------

    def _tool_key(self, index: int, call: ToolCall) -> str:
        identity = _canonical([self.last_fingerprint, index, call.name, dict(call.arguments)])
        return f"{self.prefix}/tools/{_digest(identity)}.json"

    async def replay_tool(self, index: int, call: ToolCall) -> ToolResult | None:
        """The journaled result of a safe tool call, when the answer asking for it was replayed."""
        if not self.last_replayed:
            return None
        entry = await self._read(self._tool_key(index, call))
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            return None
        return ToolResult(call.id, call.name, entry["content"], bool(entry.get("is_error")))

    async def record_tool(self, index: int, call: ToolCall, result: ToolResult) -> None:
        entry = {"v": JOURNAL_VERSION, "run": self.run, "content": result.content}
        entry["is_error"] = result.is_error
        await self._write(self._tool_key(index, call), entry)

    # -- storage ---------------------------------------------------------------------------------

    async def _read(self, key: str) -> Any:
        try:
            data = await self.store.read(key)
        except Exception as exc:  # an unreachable store only costs the replay
            LOG.debug("journal read %s failed: %s", key, exc)
            return None
        if not data:
            return None
        try:
            entry = load_stored(data)
        except DamagedEntry as exc:
            warn_damaged(LOG, f"journal entry {key}", exc, "the call goes live")
            return None
        if not isinstance(entry, dict) or entry.get("v") != JOURNAL_VERSION:
            return None
        if self.only_run and entry.get("run") != self.run:
            return None
        return entry

    async def _write(self, key: str, entry: Any) -> None:
        """Store ``entry`` with secret values masked (answers are kept, never secrets)."""
        data = json.dumps(
            self._secrets_only.data(entry), ensure_ascii=False, separators=(",", ":")
        ).encode("utf-8")
        try:
            await self.store.write(key, data)
        except Exception as exc:  # never fail a pass because its journal could not be kept
            LOG.warning("journal entry %s not written: %s", key, exc)


def _answer_options(options: Any) -> dict[str, Any]:
    """Provider options that change the answer: volatile and secret-named keys dropped."""
    return {
        key: value
        for key, value in dict(options or {}).items()
        if key not in VOLATILE_OPTIONS and not is_secret_name(str(key))
    }


def _response_of(entry: Any) -> ModelResponse | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("response"), dict):
        return None
    try:
        return response_from_record(entry["response"])
    except (KeyError, TypeError, ValueError):
        return None
