"""Share provider instances for a run: ``ProviderPool`` builds one instance per distinct
provider block (the class each block names: ``providers.classes``), so stateful providers (the
scripted cursor, a client's connection pool) are shared by every task and every retry; the
``--provider`` override; what a task's checkpoint key records of who answers it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._messages import ModelRequest, ModelResponse
from .._process.memo import IdentityMemo
from ..errors import ConfigError
from ..workflow.config import ProviderConfig
from ..workflow.providers import NO_PROVIDER_MESSAGE, canonical_type
from ..workflow.tree import ResolvedProvider, Task, Workflow
from .base import Provider
from .classes import ProviderEnv, SecretResolver, build_provider, resolve_provider_class

CallGuard = Callable[[Task], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True)
class ProviderOverride:
    """``--provider NAME [--replies FILE]``: replaces the provider of every task."""

    name: str
    replies: Path | str | None = None


def override_from_env(environ: Mapping[str, str] | None = None) -> ProviderOverride | None:
    """The override named by ``FOLPIPE_PROVIDER`` / ``FOLPIPE_REPLIES``, if any."""
    env = os.environ if environ is None else environ
    name = env.get("FOLPIPE_PROVIDER", "").strip()
    replies = env.get("FOLPIPE_REPLIES", "").strip() or None
    if not name:
        if replies:
            return ProviderOverride("scripted", replies)
        return None
    return ProviderOverride(name, replies)


class GuardedProvider:
    """A provider whose every ``complete`` call runs inside ``call_guard(task)``."""

    def __init__(self, inner: Provider, guard: Callable[[], AbstractAsyncContextManager[Any]]):
        self.inner = inner
        self._guard = guard
        self.name = provider_name(inner)
        self.supports_tools = getattr(inner, "supports_tools", True)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        async with self._guard():
            return await self.inner.complete(request)

    async def aclose(self) -> None:
        """The pool closes the shared inner provider."""
        return None

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)


def provider_name(provider: Any) -> str:
    """The adapter name of a (possibly wrapped) provider."""
    inner = getattr(provider, "inner", None)
    if inner is not None and inner is not provider:
        return provider_name(inner)
    return str(getattr(provider, "name", type(provider).__name__))


class ProviderPool:
    """One per run: builds each distinct provider once and hands it to every task using it."""

    def __init__(
        self,
        workflow: Workflow,
        override: ProviderOverride | None = None,
        *,
        secret_resolver: SecretResolver | None = None,
        call_guard: CallGuard | None = None,
        record: Path | None = None,
    ) -> None:
        self.workflow = workflow
        self.override = override
        self.secret_resolver = secret_resolver
        self.call_guard = call_guard
        self.record = record
        self._instances: dict[str, Provider] = {}
        self._lock = threading.Lock()
        self._recorder: Any = None

    def for_task(self, task: Task) -> Provider:
        """The provider of ``task`` (the override's when one is set), shared across the run."""
        if self.override is not None:
            key, block, env = self._override_block()
        elif task.provider is None:
            raise ConfigError(NO_PROVIDER_MESSAGE, code="FP300")
        else:
            key, block, env = self._task_block(task.provider)
        with self._lock:  # tasks may ask from worker threads; build each provider once
            provider = self._instances.get(key)
            if provider is None:
                factory = resolve_provider_class(block.type or env.name, block.module)
                provider = build_provider(factory, block, env)
                if self.record is not None:
                    provider = self._cassette_recorder().wrap(provider)
                self._instances[key] = provider
        if self.call_guard is None:
            return provider
        guard = self.call_guard
        return GuardedProvider(provider, lambda: guard(task))  # type: ignore[return-value]

    def _cassette_recorder(self) -> Any:
        """The run's cassette recorder (``record=``), shared by every provider of the pool."""
        if self._recorder is None:
            from .replay import CassetteRecorder

            assert self.record is not None
            self._recorder = CassetteRecorder(Path(self.record), self.workflow.root_dir)
        return self._recorder

    def _task_block(self, resolved: ResolvedProvider) -> tuple[str, ProviderConfig, ProviderEnv]:
        key, block = _TYPED_BLOCKS(resolved)
        return key, block, self._env(resolved.name)

    def _override_block(self) -> tuple[str, ProviderConfig, ProviderEnv]:
        assert self.override is not None
        name = canonical_type(self.override.name)
        block = self._root_block(self.override.name) or ProviderConfig(type=name)
        if block.type is None and block.module is None:
            block = block.model_copy(update={"type": name})
        replies = Path(self.override.replies) if self.override.replies else None
        env = self._env(self.override.name, replies=replies)
        return f"<override>|{name}|{replies}", block, env

    def _root_block(self, name: str) -> ProviderConfig | None:
        """A block of the root ``providers:`` keyed by ``name`` or of that type, if declared."""
        blocks = self.workflow.root.config.providers or {}
        wanted = canonical_type(name)
        for key, block in blocks.items():
            if isinstance(block, str):
                continue
            if key == name or canonical_type(block.type or key) == wanted:
                return block
        return None

    def _env(self, name: str, *, replies: Path | None = None) -> ProviderEnv:
        return ProviderEnv(
            name=name,
            workflow_root=self.workflow.root_dir,
            secret_resolver=self.secret_resolver,
            replies=replies,
        )

    async def aclose(self) -> None:
        """Close every provider built by this pool."""
        instances, self._instances = list(self._instances.values()), {}
        for provider in instances:
            with contextlib.suppress(Exception):
                await provider.aclose()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. to a Dask worker) without its live clients; they are rebuilt there."""
        state = dict(self.__dict__)
        state["_instances"] = {}
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    async def __aenter__(self) -> ProviderPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


DATA_PROVIDERS = frozenset({"scripted", "replay"})
"""Providers whose answers are data (a replies file, a cassette), hashed into checkpoint keys."""


def checkpoint_salt(workflow: Workflow, task: Task, override: ProviderOverride | None) -> str:
    """Who answers ``task``, for its checkpoint key: the effective provider type (an override
    changes it) and, when the answers are data — the scripted replies, a replay cassette — a
    hash of the part that answers this task (the provider's ``checkpoint_identity(task)``), so
    editing that part re-runs the task and edits for other tasks do not. Pure: it reads the
    file (memoised on its path, size and modification time), builds no client."""
    if override is not None:
        kind = canonical_type(override.name)
    elif task.provider is not None:
        kind = task.provider.type
    else:
        return ""
    if kind not in DATA_PROVIDERS or not task.runs_agent:
        return kind
    try:
        provider: Any = _answers_provider(workflow, task, override)
    except ConfigError:  # reported where the task runs
        return kind
    return f"{kind}|{provider.checkpoint_identity(task)}"


_ANSWERS: dict[tuple[str, str, int, int], Any] = {}


def _answers_provider(workflow: Workflow, task: Task, override: ProviderOverride | None) -> Any:
    pool = ProviderPool(workflow, override)
    if override is not None:
        _, block, env = pool._override_block()
    else:
        assert task.provider is not None
        _, block, env = pool._task_block(task.provider)
    replies = env.replies or (Path(block.replies) if block.replies else None)
    if replies is not None and not replies.is_absolute() and env.replies is None:
        replies = Path(workflow.root_dir) / replies
    try:
        stat = replies.stat() if replies is not None else None
    except OSError:
        stat = None
    key = (
        str(block.type or env.name),
        str(replies),
        stat.st_size if stat else -1,
        stat.st_mtime_ns if stat else -1,
    )
    provider = _ANSWERS.get(key)
    if provider is None:
        factory = resolve_provider_class(block.type or env.name, block.module)
        provider = build_provider(factory, block, env)
        if len(_ANSWERS) > 64:
            _ANSWERS.clear()
        _ANSWERS[key] = provider
    return provider


def _typed_block(resolved: ResolvedProvider) -> tuple[str, ProviderConfig]:
    """A resolved provider's block with its adapter type filled in, and the key its instance
    is shared under (a pydantic copy and a dump: once per resolved provider, not per task)."""
    block = resolved.config
    type_name = resolved.type if resolved.type != "custom" else (block.type or resolved.name)
    if block.type is None and block.module is None:
        block = block.model_copy(update={"type": type_name})
    return f"{resolved.name}|{block.model_dump_json()}", block


_TYPED_BLOCKS = IdentityMemo(_typed_block, limit=256)
