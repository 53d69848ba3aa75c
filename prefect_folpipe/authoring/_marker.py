"""``@tool``: mark a function in ``tools/*.py`` (or a tools.md code block) as a tool; ``Hook``:
the base class of class-style hooks.

```python
from prefect_folpipe import tool, ToolContext

@tool
def search_api(ctx: ToolContext, query: str, limit: int = 10) -> dict:
    \"\"\"Search the external API.

    Args:
        query: What to look for.
        limit: At most this many records.
    \"\"\"
```

The decorator returns the function unchanged (it stays callable in the author's own tests)
and attaches a :class:`ToolMeta`. The argument schema is derived lazily, on first use, so a
type hint naming a class defined later in the module still resolves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from ._schema import FunctionSchema, function_schema

F = TypeVar("F", bound=Callable[..., Any])

TOOL_ATTRIBUTE = "__folpipe_tool__"


@dataclass(frozen=True)
class ToolMeta:
    """What ``@tool(...)`` said about a function."""

    name: str
    description: str | None = None
    retries: int | None = None
    timeout: float | None = None
    scope: Literal["shared", "local"] = "shared"
    replay: Literal["never", "safe"] | None = None
    approval: bool | Mapping[str, Any] | None = None
    """Ask a person before each call (``True``, or a block: prompt, input, timeout, ...)."""

    def metadata(self) -> dict[str, Any]:
        """The ToolSpec metadata these options become (only the ones that were given)."""
        data: dict[str, Any] = {}
        if self.retries is not None:
            data["retries"] = self.retries
        if self.timeout is not None:
            data["timeout"] = self.timeout
        if self.replay is not None:
            data["replay"] = self.replay
        if self.approval is not None and self.approval is not False:
            data["approval"] = self.approval if self.approval is True else dict(self.approval)
        return data


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    retries: int | None = None,
    timeout: float | None = None,
    scope: Literal["shared", "local"] = "shared",
    replay: Literal["never", "safe"] | None = None,
    approval: bool | Mapping[str, Any] | None = None,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    retries: int | None = None,
    timeout: float | None = None,
    scope: Literal["shared", "local"] = "shared",
    replay: Literal["never", "safe"] | None = None,
    approval: bool | Mapping[str, Any] | None = None,
) -> F | Callable[[F], F]:
    """Declare a tool: bare ``@tool`` or ``@tool(name=..., description=..., retries=...,
    timeout=..., scope=..., replay=...)``. Parameter descriptions come from the docstring's
    ``Args:``. ``replay="safe"`` lets a resumed agent pass answer the tool's calls from the
    journal instead of running it again (only for tools without side effects).
    ``approval=True`` (or a block like tools.md's ``> approval:``) asks a person before each
    call; the block is checked by ``folpipe validate``."""
    if retries is not None and retries < 0:
        raise ValueError("retries must be >= 0")
    if timeout is not None and timeout <= 0:
        raise ValueError("timeout must be > 0")
    if scope not in ("shared", "local"):
        raise ValueError("scope must be 'shared' or 'local'")
    if replay not in (None, "never", "safe"):
        raise ValueError("replay must be 'safe' or 'never'")
    if approval is not None and not isinstance(approval, bool | Mapping):
        raise ValueError("approval must be True or a mapping such as {'prompt': ...}")

    def mark(func: F) -> F:
        meta = ToolMeta(
            name=name or func.__name__,
            description=description,
            retries=retries,
            timeout=timeout,
            scope=scope,
            replay=replay,
            approval=approval,
        )
        setattr(func, TOOL_ATTRIBUTE, meta)
        return func

    return mark(fn) if fn is not None else mark


class Hook:
    """Base class for class-style hooks: subclass it and define ``run(self, ctx, task)``.

    ``run`` may be sync or ``async``; a returned mapping is merged into ``ctx.context``.
    """

    def run(self, ctx: Any, task: Any) -> Any:
        raise NotImplementedError("a Hook subclass must define run(self, ctx, task)")


def tool_meta(fn: Any) -> ToolMeta | None:
    """The ``@tool`` options of ``fn``, or None when it is not decorated."""
    meta = getattr(fn, TOOL_ATTRIBUTE, None)
    return meta if isinstance(meta, ToolMeta) else None


def describe_function(
    fn: Callable[..., Any], *, descriptions: Mapping[str, str] | None = None
) -> tuple[FunctionSchema, str]:
    """The argument schema of ``fn`` and its description (decorator text, else docstring)."""
    schema = function_schema(fn, descriptions=descriptions)
    meta = tool_meta(fn)
    text = meta.description if meta and meta.description else schema.description
    return schema, text or ""
