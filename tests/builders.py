"""Test builders shared by every tier: hand-made task trees and workflow folders from dicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from prefect_folpipe.workflow import (
    EffectiveSettings,
    ProviderConfig,
    ResolvedProvider,
    Task,
    TaskConfig,
    ToolSpec,
    Workflow,
)

ROOT = Path("/workflows/demo")
"""Where hand-made trees pretend to live (nothing is written there)."""
SCRIPTED = {"default": "scripted", "scripted": {"replies": "replies.yaml"}}


def make_tool(name: str, *, origin: str = "own", owner: str = "", kind: str = "python") -> ToolSpec:
    """A resolved tool as the loader would give it."""
    return ToolSpec(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        description=f"{name} tool",
        parameters={"type": "object", "properties": {}},
        source_file=str(ROOT / "tools.md"),
        origin=origin,  # type: ignore[arg-type]
        owner=owner,
    )


def make_task(
    name: str = "task",
    path: str | None = None,
    *,
    folder: Path | None = None,
    instructions: str | None = "Do the thing.",
    config: dict[str, Any] | None = None,
    settings: EffectiveSettings | Mapping[str, Any] | None = None,
    provider: ResolvedProvider | tuple[str, str | None] | None = None,
    children: Sequence[Task] = (),
    disabled: Sequence[Task] = (),
    tools: Sequence[ToolSpec] = (),
    own_tools: Sequence[ToolSpec] = (),
    hooks: dict[str, Path] | None = None,
    priority: int = 50,
    rel_dir: str = "",
) -> Task:
    """A resolved task (``path`` defaults to ``name``; ``config`` is task.yaml content).

    ``folder`` is created when given, else the task pretends to live under :data:`ROOT`;
    ``provider`` is a ``ResolvedProvider`` or ``(block, model)``.
    """
    path = name if path is None else path
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    if isinstance(provider, tuple):
        block, model = provider
        provider = ResolvedProvider(name=block, type=block, config=ProviderConfig(model=model))
    if not isinstance(settings, EffectiveSettings):
        settings = EffectiveSettings(**dict(settings or {}))
    return Task(
        name=name,
        path=path,
        folder=folder or (ROOT / path if path else ROOT),
        config=TaskConfig.model_validate(config or {}),
        settings=settings,
        priority=priority,
        instructions=instructions,
        system_prompt=instructions,
        children=tuple(children),
        disabled_children=tuple(disabled),
        tools=tuple(tools),
        own_tools=tuple(own_tools),
        provider=provider,
        hooks=hooks or {},
        rel_dir=rel_dir,
    )


def workflow_around(
    root: Task, root_dir: Path = ROOT, *, providers: dict[str, Any] | None = None
) -> Workflow:
    """A workflow around ``root`` (its config gets a ``providers`` block when given)."""
    if providers is not None:
        block = TaskConfig.model_validate({"providers": providers}).providers
        root = replace(root, config=root.config.model_copy(update={"providers": block}))
    return Workflow(root=root, root_dir=root_dir, name=root_dir.name)


def scripted_provider(replies: str = "replies.yaml", **extra: Any) -> ResolvedProvider:
    """The resolved provider of a task whose root block is ``scripted: {replies: ...}``."""
    return ResolvedProvider(
        name="scripted",
        type="scripted",
        config=ProviderConfig.model_validate({"replies": replies, **extra}),
    )


def write_files(root: Path, files: Mapping[str, Any]) -> Path:
    """Write ``{relative path: text, or data written as YAML}`` under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        target.write_text(text, encoding="utf-8")
    return root


def write_workflow(root: Path, files: Mapping[str, Any]) -> Path:
    """A workflow folder from ``files``; the root task.yaml gets the scripted provider
    (replies.yaml, default answer ``ok``) unless it names providers."""
    files = dict(files)
    root_yaml = dict(files.pop("task.yaml", {}) or {})
    root_yaml.setdefault("providers", SCRIPTED)
    files["task.yaml"] = root_yaml
    replies = files.get("replies.yaml", {})
    if isinstance(replies, dict):
        files["replies.yaml"] = {"default": "ok", **replies}
    return write_files(root, files)


def forget_parses() -> None:
    """Forget what this process parsed and close the parse cache: the loader then starts as
    a new ``folpipe validate`` process would (the on-disk parse cache stays)."""
    from prefect_folpipe.loader import _files
    from prefect_folpipe.loader.tools import _toolsmd as toolsmd
    from prefect_folpipe.loader.tools import parsecache

    toolsmd._PARSED.clear()
    _files._PARSED.clear()
    for cache in parsecache._CACHE.values():
        if cache is not None:
            cache._close(broken=False)
    parsecache._CACHE.clear()


def deploy_tools_md(approval: str) -> str:
    """A tools.md with one python tool, ``deploy(version)``, gated by the ``approval`` flow
    mapping: the tool writes ``deployed.txt`` (the version) into its task folder."""
    return f'''\
## deploy
> approval: {approval}

Deploy a version.

```python
from prefect_folpipe import ToolContext


def deploy(ctx: ToolContext, version: str) -> str:
    """Deploy.

    Args:
        version: The version.
    """
    import pathlib
    pathlib.Path(ctx.task_dir, "deployed.txt").write_text(version)
    return f"deployed {{version}}"
```
'''
