"""Hand-made trees for rendering tests (no loader involved) and the CLI fixtures folder."""

from __future__ import annotations

from pathlib import Path

from builders import ROOT, make_task, make_tool, workflow_around

from prefect_folpipe.workflow import EffectiveSettings, Workflow

__all__ = [
    "CLI_FIXTURES",
    "ROOT",
    "cv_pipeline",
    "graph_workflow",
    "make_task",
    "make_tool",
    "workflow_around",
]


def cv_pipeline() -> Workflow:
    """A generate/review loop (folpipe 0.1.8's cv_pipeline)."""
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
    return workflow_around(root)


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
    return workflow_around(root)


CLI_FIXTURES = Path(__file__).parent.parent / "fixtures" / "cli"
