"""Build spec.Task / spec.Workflow values by hand for agent and provider tests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from prefect_folpipe.workflow.config import ProviderConfig, TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, ResolvedProvider, Task, Workflow


def make_task(
    folder: Path,
    name: str = "task",
    *,
    path: str | None = None,
    instructions: str | None = "Do the thing.",
    config: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    provider: ResolvedProvider | None = None,
    rel_dir: str = "",
    hooks: dict[str, Path] | None = None,
    children: tuple[Task, ...] = (),
) -> Task:
    """A resolved task; ``config`` is task.yaml content, ``settings`` effective settings."""
    folder.mkdir(parents=True, exist_ok=True)
    return Task(
        name=name,
        path=name if path is None else path,
        folder=folder,
        config=TaskConfig.model_validate(config or {}),
        settings=EffectiveSettings(**(settings or {})),
        instructions=instructions,
        system_prompt=instructions,
        provider=provider,
        rel_dir=rel_dir,
        hooks=hooks or {},
        children=children,
    )


def scripted_provider(replies: str = "replies.yaml", **extra: Any) -> ResolvedProvider:
    """The resolved provider of a task whose root block is ``scripted: {replies: ...}``."""
    return ResolvedProvider(
        name="scripted",
        type="scripted",
        config=ProviderConfig.model_validate({"replies": replies, **extra}),
    )


def make_workflow(root: Task, root_dir: Path, *, providers: dict[str, Any] | None = None):
    """A workflow around ``root`` (its config gets ``providers`` when given)."""
    if providers is not None:
        config = root.config.model_copy(
            update={"providers": TaskConfig.model_validate({"providers": providers}).providers}
        )
        root = replace(root, config=config)
    return Workflow(root=root, root_dir=root_dir, name=root_dir.name)
