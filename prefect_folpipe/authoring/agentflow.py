"""``import agentflow`` for workflow code written for folpipe 0.1.8 (import name ``agentflow``).

folpipe 0.1.8 told tool authors to write ``from agentflow import tool, ToolContext`` and
hook authors ``from agentflow.hooks.base import Hook``. While folpipe loads or runs workflow
code (``tools/*.py``, tools.md code blocks, ``scripts/*.py``, hooks, tool calls), the
:func:`agentflow_imports` context adds a finder at the *end* of ``sys.meta_path`` that answers
these modules from this one:

* ``agentflow``, ``agentflow.core.tool``: ``tool`` (0.1.8's signature: ``@tool()``,
  ``@tool("name")``, ``@tool(description=..., scope=...)``, and bare ``@tool``),
  ``ToolContext``, ``ToolSpec``;
* ``agentflow.hooks.base``: ``Hook``;
* ``agentflow.exceptions``: ``AgentflowError`` (= ``FolpipeError``), ``ToolError``,
  ``ConfigError``, ``ProviderError``, ``TaskNotFoundError``, ``TaskTimeoutError``;
* ``agentflow.utils.logging``: ``get_logger``.

Nothing is installed as a top-level ``agentflow`` package (an unrelated project of that name
exists on PyPI): a real ``agentflow`` on ``sys.path`` wins, and the modules answered here are
dropped from ``sys.modules`` when the last user leaves the context.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import errors
from ..workflow.tree import ToolSpec
from ._context import ToolContext
from ._marker import Hook
from ._marker import tool as _tool

ROOT = "agentflow"
VERSION = "0.1.8"


class TaskNotFoundError(errors.FolpipeError):
    """folpipe 0.1.8's ``TaskNotFoundError`` (a task path that does not exist)."""


class TaskTimeoutError(errors.FolpipeError):
    """folpipe 0.1.8's ``TaskTimeoutError``."""


def tool(*args: Any, **kwargs: Any) -> Any:
    """folpipe 0.1.8's ``tool(name=None, description=None, scope="shared")`` decorator factory
    (``@tool()``, ``@tool("name")``); bare ``@tool`` works too."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _tool(args[0])
    if len(args) > 3:
        raise TypeError("tool() takes at most 3 positional arguments (name, description, scope)")
    names = ("name", "description", "scope")
    for name, value in zip(names, args, strict=False):
        if name in kwargs:
            raise TypeError(f"tool() got multiple values for argument {name!r}")
        kwargs[name] = value
    return _tool(**kwargs)


def get_logger(name: str = ROOT) -> logging.Logger:
    """folpipe 0.1.8's ``agentflow.utils.logging.get_logger``."""
    return logging.getLogger(name)


_TOOL_NAMES = {"tool": tool, "ToolContext": ToolContext, "ToolSpec": ToolSpec}
MODULES: dict[str, dict[str, Any]] = {
    ROOT: {**_TOOL_NAMES, "Hook": Hook, "__version__": VERSION},
    f"{ROOT}.core": {},
    f"{ROOT}.core.tool": dict(_TOOL_NAMES),
    f"{ROOT}.hooks": {},
    f"{ROOT}.hooks.base": {"Hook": Hook},
    f"{ROOT}.exceptions": {
        "AgentflowError": errors.FolpipeError,
        "ToolError": errors.ToolError,
        "ConfigError": errors.ConfigError,
        "ProviderError": errors.ProviderError,
        "TaskNotFoundError": TaskNotFoundError,
        "TaskTimeoutError": TaskTimeoutError,
    },
    f"{ROOT}.utils": {},
    f"{ROOT}.utils.logging": {"get_logger": get_logger},
}
"""Every module answered, with its attributes; a name ending in a dot-free parent is a
package when another module lives below it."""
SUPPORTED_HINT = (
    "folpipe answers `agentflow`, `agentflow.core.tool`, `agentflow.hooks.base`, "
    "`agentflow.exceptions` and `agentflow.utils.logging` (tool, ToolContext, Hook, errors, "
    "get_logger); import other names from `prefect_folpipe`"
)


def _is_package(name: str) -> bool:
    return any(other.startswith(f"{name}.") for other in MODULES)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__.update(MODULES[module.__name__])
        module.__dict__["__folpipe_compat__"] = True


class _Finder(importlib.abc.MetaPathFinder):
    """Answers the ``agentflow`` modules of :data:`MODULES` (only those)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in MODULES:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _Loader(), is_package=_is_package(fullname), origin="prefect_folpipe"
        )


_FINDER = _Finder()
_lock = threading.Lock()
_users = 0


@contextmanager
def agentflow_imports() -> Iterator[None]:
    """While inside, workflow code can ``import agentflow`` (nested and thread-safe)."""
    global _users
    with _lock:
        if _users == 0 and _FINDER not in sys.meta_path:
            sys.meta_path.append(_FINDER)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _uninstall()


def _uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in MODULES:  # a few names, not every module the process imported
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__folpipe_compat__", False):
            del sys.modules[name]


def with_agentflow(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` wrapped so that it runs inside :func:`agentflow_imports`."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with agentflow_imports():
            return function(*args, **kwargs)

    return call
