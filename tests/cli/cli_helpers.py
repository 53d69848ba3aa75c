"""Builders of hand-made ``spec`` trees for rendering tests (no loader involved)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def make_tool(name: str, *, origin: str = "own", owner: str = "", kind: str = "python") -> ToolSpec:
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
    name: str,
    path: str,
    *,
    children: Sequence[Task] = (),
    disabled: Sequence[Task] = (),
    config: dict[str, Any] | None = None,
    tools: Sequence[ToolSpec] = (),
    own_tools: Sequence[ToolSpec] = (),
    provider: tuple[str, str | None] | None = None,
    instructions: str | None = "Do the work.",
    priority: int = 50,
    settings: EffectiveSettings | None = None,
) -> Task:
    resolved = None
    if provider is not None:
        block, model = provider
        resolved = ResolvedProvider(name=block, type=block, config=ProviderConfig(model=model))
    return Task(
        name=name,
        path=path,
        folder=ROOT / path if path else ROOT,
        config=TaskConfig.model_validate(config or {}),
        settings=settings or EffectiveSettings(),
        priority=priority,
        instructions=instructions,
        children=tuple(children),
        disabled_children=tuple(disabled),
        tools=tuple(tools),
        own_tools=tuple(own_tools),
        provider=resolved,
    )


def make_workflow(root: Task) -> Workflow:
    return Workflow(root=root, root_dir=ROOT, name=root.name)


def cv_pipeline() -> Workflow:
    """The spec's generate/review loop (§8.1)."""
    generate = make_task("generate_cv", "generate_cv", priority=10)
    review = make_task("review_cv", "review_cv", priority=20)
    root = make_task(
        "cv_pipeline",
        "",
        instructions=None,
        children=[generate, review],
        config={
            "subtasks": {
                "execution_type": "loop",
                "until": "context.review_cv.approved == true",
                "max_iterations": 5,
                "iteration_timeout": 120,
            }
        },
    )
    return make_workflow(root)


def graph_workflow() -> Workflow:
    """fetch_a and fetch_b in parallel, merge after both, one disabled child."""
    fetch_a = make_task("fetch_a", "fetch_a", priority=10)
    fetch_b = make_task("fetch_b", "fetch_b", priority=10)
    merge = make_task("merge", "merge", config={"depends_on": ["fetch_a", "fetch_b"]})
    old = make_task("old_step", "old_step", config={"enabled": False}, priority=90)
    root = make_task(
        "report",
        "",
        instructions=None,
        children=[fetch_a, fetch_b, merge],
        disabled=[old],
        config={"subtasks": {"execution_type": "graph"}},
        settings=EffectiveSettings(parallel_workers=2),
    )
    return make_workflow(root)


def loader_ready() -> bool:
    """Whether the loader and validator are in the tree yet (they land in increments)."""
    try:
        from prefect_folpipe.validate import (
            load_workflow,  # noqa: F401
            validate_workflow,  # noqa: F401
        )
    except ImportError:
        return False
    return True


CLI_FIXTURES = Path(__file__).parent.parent / "fixtures" / "cli"
