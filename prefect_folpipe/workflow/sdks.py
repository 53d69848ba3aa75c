"""Which optional SDKs a run needs, and which of them this interpreter lacks.

The built-in ``anthropic`` / ``openai`` / ``ollama`` adapters and ``mcp`` tools each need an
optional package (an extra of the same name). Finding one missing is a lookup
(``importlib.util.find_spec``): the SDK is never imported here, so ``folpipe validate`` stays
fast and a run is refused before any server or flow run exists.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigError
from .providers import builtin_of_module, canonical_type
from .tree import Task, Workflow

PROVIDER_SDKS: frozenset[str] = frozenset({"anthropic", "openai", "ollama"})
"""Built-in adapters whose SDK is an optional extra (the module and the extra share the name)."""
MCP_SDK = "mcp"


@dataclass(frozen=True)
class MissingSdk:
    """An SDK the run needs and cannot import: the extra, and who needs it."""

    module: str
    """The package and the extra to install (``anthropic``)."""
    needed_by: str
    """``provider 'claude'`` or ``mcp tool 'search'``."""
    provider: str | None = None
    """The key of the root ``providers:`` block that needs it (``None``: an override, a tool)."""

    @property
    def install(self) -> str:
        return f"pip install 'prefect-folpipe[{self.module}]'"

    @property
    def message(self) -> str:
        return f"{self.needed_by} needs the {self.module!r} package, which is not installed"


def sdk_installed(module: str) -> bool:
    """Whether ``module`` can be imported (located, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder refused it, or a broken __spec__
        return False


def override_type(workflow: Workflow, name: str) -> str:
    """The adapter ``--provider NAME`` means: a root block of that key names its type."""
    block = (workflow.root.config.providers or {}).get(name)
    if block is not None and not isinstance(block, str):
        if block.type:
            return canonical_type(block.type)
        if block.module:
            return builtin_of_module(block.module) or "custom"
    return canonical_type(name)


def missing_sdks(
    workflow: Workflow, tasks: Iterable[Task] | None = None, override: str | None = None
) -> list[MissingSdk]:
    """The SDKs ``tasks`` (default: every enabled task) need and cannot import, one entry per
    package. ``override`` is ``--provider NAME``: it replaces every agent task's provider."""
    found: dict[str, MissingSdk] = {}

    def need(module: str, needed_by: str, provider: str | None = None) -> None:
        if module not in found and not sdk_installed(module):
            found[module] = MissingSdk(module, needed_by, provider)

    kind = override_type(workflow, override) if override else None
    for task in workflow.tasks() if tasks is None else tasks:
        if task.runs_agent:
            if kind is not None:
                if kind in PROVIDER_SDKS:
                    need(kind, f"--provider {override}")
            elif task.provider is not None and task.provider.type in PROVIDER_SDKS:
                name = task.provider.name
                need(task.provider.type, f"provider {name!r}", name)
        for tool in task.tools:
            if tool.kind == MCP_SDK:
                need(MCP_SDK, f"mcp tool {tool.name!r}")
    return list(found.values())


def missing_sdk_error(missing: list[MissingSdk]) -> ConfigError:
    """FP321 naming every missing package and the one ``pip install`` line for them all."""
    extras = ",".join(m.module for m in missing)
    return ConfigError(
        "; ".join(m.message for m in missing),
        code="FP321",
        hint=f"pip install 'prefect-folpipe[{extras}]'",
    )


def check_sdks(
    workflow: Workflow, tasks: Iterable[Task] | None = None, override: str | None = None
) -> None:
    """Raise FP321 when the run would need an SDK this interpreter cannot import."""
    missing = missing_sdks(workflow, tasks, override)
    if missing:
        raise missing_sdk_error(missing)
