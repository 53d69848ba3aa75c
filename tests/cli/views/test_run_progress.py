"""The live view renders the task tree from tracker records (no Prefect needed)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from prefect_folpipe.cli._progress import ProgressView
from prefect_folpipe.compile.report._records import RunTracker
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow


def _workflow() -> Workflow:
    leaf = Task(
        name="review",
        path="loop/review",
        folder=Path("/wf/subtasks/loop/subtasks/review"),
        config=TaskConfig(),
        settings=EffectiveSettings(),
        instructions="Review.",
    )
    loop = Task(
        name="loop",
        path="loop",
        folder=Path("/wf/subtasks/loop"),
        config=TaskConfig(),
        settings=EffectiveSettings(),
        children=(leaf,),
    )
    root = Task(
        name="wf",
        path="",
        folder=Path("/wf"),
        config=TaskConfig(),
        settings=EffectiveSettings(),
        children=(loop,),
    )
    return Workflow(root=root, root_dir=Path("/wf"), name="wf")


def test_view_shows_states_attempts_iterations_and_tokens() -> None:
    workflow = _workflow()
    view = ProgressView(workflow, Console(width=120, record=True))
    tracker = RunTracker(workflow.tasks(), [view.listener])
    tracker.start("", None)
    tracker.start("loop/review", 2)
    tracker.attempt("loop/review", 1)
    tracker.charge("loop/review", {"usage": {"input_tokens": 40, "output_tokens": 2}})
    console = Console(width=120, record=True)
    console.print(view.render())
    text = console.export_text()
    assert "wf (root)" in text and "review" in text
    assert "running" in text and "pending" in text
    assert "42" in text  # tokens
    tracker.finish("loop/review", "cached")
    console = Console(width=120, record=True)
    console.print(view.render())
    assert "cached" in console.export_text()
