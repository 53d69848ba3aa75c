"""Find, build and share provider instances: built-ins, entry points and ``module:`` classes.

A provider block picks its adapter by ``type:`` (or ``module:``); ``ProviderPool`` builds one
instance per distinct block for a whole run, so stateful providers (the scripted cursor, a
client's connection pool) are shared by every task and every retry.

How a provider class is built: if it has a ``from_config(config, env)`` classmethod, that is
called with the block (``workflow.config.ProviderConfig``) and a ``ProviderEnv``; otherwise the
class is called with the block's settings as keyword arguments (extra keys included).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ConfigError, did_you_mean
from ..messages import ModelRequest, ModelResponse
from ..workflow.config import ProviderConfig
from ..workflow.providers import (
    BUILTIN_TYPES,
    ENTRY_POINT_GROUP,
    NO_PROVIDER_MESSAGE,
    builtin_of_module,
    canonical_type,
    known_provider_names,
)
from ..workflow.tree import ResolvedProvider, Task, Workflow
from .base import Provider

MODULES: dict[str, str] = {name: f"prefect_folpipe.providers.{name}" for name in BUILTIN_TYPES}
"""Built-in adapter -> its module (imported on first use)."""
BLOCK_KEYS = frozenset({"type", "module"})

SecretResolver = Callable[[str], str]
CallGuard = Callable[[Task], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True)
class ProviderEnv:
    """What a provider's ``from_config`` may need beyond its block."""

    name: str
    """Key of the providers block (``claude``) or the built-in name."""
    workflow_root: Path | None = None
    secret_resolver: SecretResolver | None = None
    replies: Path | None = None
    """Replies/cassette file given on the command line (overrides the block's ``replies``)."""


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


def resolve_provider_class(type_name: str | None, module: str | None = None) -> Any:
    """The class (or factory) for a block: ``module:`` first, then built-ins, then entry points."""
    builtin = builtin_of_module(module) if module else None
    if module and builtin is None:
        return load_module_provider(module)
    name = builtin or canonical_type(type_name or "")
    if name in MODULES:
        return _load_builtin(name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return _load_entry_point(ep)
    hint = did_you_mean(name, known_provider_names()) or (
        f"use one of {', '.join(known_provider_names())}, or `module: pkg.mod:Class`"
    )
    raise ConfigError(f"unknown provider type {name!r}", code="FP301", hint=hint)


def _load_builtin(name: str) -> Any:
    module_name = MODULES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        hint = (
            f"install the SDK: pip install 'prefect-folpipe[{name}]'"
            if missing != module_name
            else f"the {name!r} provider is not available in this installation"
        )
        raise ConfigError(
            f"provider {name!r} cannot be loaded: module {missing!r} is missing",
            code="FP302",
            hint=hint,
        ) from None
    return find_provider_class(module, expected_name=name)


def _load_entry_point(ep: Any) -> Any:
    try:
        return ep.load()
    except Exception as exc:
        raise ConfigError(
            f"provider entry point {ep.name!r} ({ep.value}) failed to load: {exc}",
            code="FP302",
            hint=f"check the package that registers it in the {ENTRY_POINT_GROUP!r} group",
        ) from None


def load_module_provider(spec: str) -> Any:
    """``pkg.mod`` (its single provider class) or ``pkg.mod:ClassName``."""
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        legacy = module_name.startswith("agentflow.")
        raise ConfigError(
            f"custom provider module {module_name!r} cannot be imported: {exc}",
            code="FP302",
            hint="folpipe 0.1.8's provider modules other than ollama and http are not provided: "
            "use a built-in `type:`, or `--provider scripted --replies FILE` for offline runs"
            if legacy
            else "make the module importable (installed, or on PYTHONPATH)",
        ) from None
    if class_name:
        found = getattr(module, class_name, None)
        if found is None:
            raise ConfigError(
                f"module {module_name!r} has no attribute {class_name!r}",
                code="FP303",
                hint="write `module: package.module:ClassName`",
            )
        return found
    return find_provider_class(module)


def find_provider_class(module: ModuleType, *, expected_name: str | None = None) -> type:
    """The one provider-shaped class defined in ``module`` (an async ``complete`` method)."""
    candidates = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and inspect.iscoroutinefunction(getattr(obj, "complete", None))
        and not inspect.isabstract(obj)
        and not getattr(obj, "_is_protocol", False)
    ]
    if len(candidates) > 1 and expected_name:
        named = [c for c in candidates if getattr(c, "name", None) == expected_name]
        candidates = named or candidates
    if len(candidates) == 1:
        return candidates[0]
    names = sorted(c.__name__ for c in candidates)
    problem = f"several provider classes ({', '.join(names)})" if names else "no provider class"
    raise ConfigError(
        f"module {module.__name__!r} has {problem}",
        code="FP303",
        hint="a provider class has an `async def complete(self, request)` method; name it "
        "with `module: package.module:ClassName`",
    )


def build_provider(factory: Any, config: ProviderConfig, env: ProviderEnv) -> Provider:
    """Instantiate a provider class: ``from_config(config, env)`` if it has one, else kwargs."""
    try:
        if hasattr(factory, "from_config"):
            provider = factory.from_config(config, env)
        else:
            provider = factory(**block_settings(config))
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"provider {env.name!r} rejected its settings: {exc}",
            code="FP307",
            hint="check the keys of this provider block in the root task.yaml",
        ) from None
    if not inspect.iscoroutinefunction(getattr(provider, "complete", None)):
        raise ConfigError(
            f"provider {env.name!r} ({type(provider).__name__}) has no async `complete` method",
            code="FP303",
            hint="implement `async def complete(self, request: ModelRequest) -> ModelResponse`",
        )
    return provider


def block_settings(config: ProviderConfig) -> dict[str, Any]:
    """The block's settings as keyword arguments (unset/None and type/module dropped)."""
    data = config.model_dump(exclude_none=True)
    return {key: value for key, value in data.items() if key not in BLOCK_KEYS}


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
        block = resolved.config
        type_name = resolved.type if resolved.type != "custom" else (block.type or resolved.name)
        if block.type is None and block.module is None:
            block = block.model_copy(update={"type": type_name})
        key = f"{resolved.name}|{block.model_dump_json()}"
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
