"""``ToolContext``: what a Python tool (and a hook) gets as its ``ctx`` argument."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._grants import AllowedRoots, allowed_roots, resolve_path

if TYPE_CHECKING:
    import httpx

    from ..workflow.tree import EffectiveSettings, Task, Workflow

_MISSING = object()
HTTP_TIMEOUT = 30.0


class ToolContext:
    """Access to the task's context, folders, logger and HTTP clients.

    * ``ctx.get("key")`` / ``ctx.get("a.b")`` read the task's context (dotted keys walk dicts),
      ``ctx.set("key", value)`` writes a top-level key;
    * ``ctx.context`` is the context dict itself (``ctx.state`` is an alias, as tools and hooks
      written for folpipe 0.1.8 use it);
    * ``ctx.task_dir`` / ``ctx.workflow_root`` are absolute paths (``ctx.task_path`` is an
      alias of ``task_dir``, folpipe 0.1.8's name);
    * ``ctx.http`` is a synchronous ``httpx.Client`` (for sync tools), ``ctx.ahttp`` an
      ``httpx.AsyncClient`` (for async tools); both are created on first use and closed when
      the task's toolbox closes;
    * ``ctx.resolve_path(p)`` maps a path into the task's allowed roots or raises
      ``SandboxViolation``. The roots are computed when the context is made (the task's start):
      nothing a tool does during the run widens them.
    """

    def __init__(
        self,
        *,
        context: MutableMapping[str, Any] | None = None,
        task_dir: str | Path = ".",
        workflow_root: str | Path | None = None,
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
        task: Task | None = None,
        workflow: Workflow | None = None,
    ) -> None:
        self.context: MutableMapping[str, Any] = context if context is not None else {}
        self.task_dir = Path(task_dir).absolute()
        self.workflow_root = Path(workflow_root).absolute() if workflow_root else self.task_dir
        self.logger = logger or logging.getLogger("prefect_folpipe.tools")
        self.task = task
        self.workflow = workflow
        self.resources: dict[str, Any] = {}
        """Per-task state runners may keep (e.g. open MCP sessions); see ``on_close``."""
        self._http: httpx.Client | None = None
        self._ahttp: httpx.AsyncClient | None = None
        self._lock = threading.Lock()
        self._on_close: list[Callable[[], Awaitable[None]]] = []
        self._roots: AllowedRoots = allowed_roots(self.task_dir)

    @property
    def settings(self) -> EffectiveSettings | None:
        """The task's effective settings (None outside a workflow run)."""
        return self.task.settings if self.task is not None else None

    def get(self, key: str, default: Any = None) -> Any:
        """A context value; ``"a.b"`` walks nested dicts when no key ``"a.b"`` exists."""
        if key in self.context:
            return self.context[key]
        node: Any = self.context
        for part in key.split("."):
            if not isinstance(node, Mapping):
                return default
            node = node.get(part, _MISSING)
            if node is _MISSING:
                return default
        return node

    def set(self, key: str, value: Any) -> None:
        """Write ``value`` under the top-level ``key`` (merged upward like any task output)."""
        self.context[key] = value

    @property
    def state(self) -> MutableMapping[str, Any]:
        """Alias of ``context`` (folpipe 0.1.8's name; its tools and hooks use it)."""
        return self.context

    @property
    def task_path(self) -> Path:
        """Alias of ``task_dir`` (folpipe 0.1.8's name: the task's folder)."""
        return self.task_dir

    def resolve_path(self, path: str | Path) -> Path:
        """The real path of ``path`` if the task may touch it, else ``SandboxViolation``."""
        return resolve_path(self.task_dir, path, self._roots)

    @property
    def http(self) -> httpx.Client:
        """A synchronous httpx client (use from sync tools)."""
        with self._lock:
            if self._http is None:
                import httpx

                self._http = httpx.Client(timeout=HTTP_TIMEOUT, follow_redirects=True)
            return self._http

    @property
    def ahttp(self) -> httpx.AsyncClient:
        """An asynchronous httpx client (use from ``async def`` tools)."""
        with self._lock:
            if self._ahttp is None:
                import httpx

                self._ahttp = httpx.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=True)
            return self._ahttp

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Register an async callback run by ``aclose`` (last registered, first run)."""
        self._on_close.append(callback)

    async def aclose(self) -> None:
        """Run the ``on_close`` callbacks and close the HTTP clients that were opened."""
        while self._on_close:
            await self._on_close.pop()()
        if self._http is not None:
            self._http.close()
            self._http = None
        if self._ahttp is not None:
            await self._ahttp.aclose()
            self._ahttp = None

    def __repr__(self) -> str:
        return f"ToolContext(task_dir={str(self.task_dir)!r}, keys={sorted(self.context)!r})"
