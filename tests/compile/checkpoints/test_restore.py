"""Restoring from checkpoints without a task run per task (issue 15 point 2) keeps behaviour:
a cached re-run reports every task as a run through Prefect's own cache would, with the same
context; a changed leaf re-runs only itself and what depends on its output; the UI shows the
restore as one Cached task run whose artifact names every task and its checkpoint."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from records import recorded_task_runs

from benchmarks import trees  # the benchmarks' tree generator
from prefect_folpipe.compile.options import RunOptions

pytestmark = pytest.mark.prefect


PROBE = trees.python_tool("probe", "Probe.")


def _branchy() -> dict[str, Any]:
    """Every shape a restore must replay: passes around children, skip_if, a tool call, a
    loop of two iterations, a graph."""
    return {
        "task.yaml": {"name": "branchy", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {
            "default": "ok",
            "tasks": {
                "plan": [{"output": {"topic": "t"}}],
                "research/c": [
                    {"tool_calls": [{"name": "probe", "arguments": {"query": "q"}}]},
                    "probed",
                ],
                "check": [{"output": {"approved": False}}, {"output": {"approved": True}}],
            },
        },
        "subtasks/10_plan/task.yaml": {"output": ["topic"]},
        "subtasks/10_plan/instructions.md": "Pick a topic.",
        "subtasks/20_research/instructions.md": "Research it, then summarise the parts.",
        "subtasks/20_research/subtasks/a/task.yaml": {
            "conditions": {"skip_if": "context.topic == 't'"}
        },
        "subtasks/20_research/subtasks/a/instructions.md": "Skipped part.",
        "subtasks/20_research/subtasks/b/instructions.md": "Part b.",
        "subtasks/20_research/subtasks/c/instructions.md": "Part c: probe first.",
        "subtasks/20_research/subtasks/c/tools.md": PROBE,
        "subtasks/30_review/task.yaml": {
            "subtasks": {"execution_type": "loop", "until": "context.approved", "max_iterations": 3}
        },
        "subtasks/30_review/subtasks/check/task.yaml": {"output": ["approved"]},
        "subtasks/30_review/subtasks/check/instructions.md": "Approve?",
        "subtasks/40_graph/task.yaml": {"subtasks": {"execution_type": "graph"}},
        "subtasks/40_graph/subtasks/x/instructions.md": "X.",
        "subtasks/40_graph/subtasks/y/task.yaml": {"depends_on": ["x"]},
        "subtasks/40_graph/subtasks/y/instructions.md": "Y after x.",
        "subtasks/40_graph/subtasks/z/instructions.md": "Z.",
    }


def _statuses(result: Any) -> dict[str, str]:
    return {row["path"]: row["status"] for row in result.tasks}


def _rows(result: Any) -> dict[str, tuple[Any, ...]]:
    """What the run document says per task, durations aside."""
    return {
        row["path"]: (row["status"], row["attempts"], row["iterations"], row["model_calls"])
        for row in result.tasks
    }


async def _artifacts(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from prefect_folpipe import flush_artifacts

    assert flush_artifacts(30), "artifacts still queued after 30 s"
    async with get_client() as client:
        return await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


def test_a_cached_rerun_is_one_cached_task_run_reporting_every_task_cached(make_workflow, run):
    folder = make_workflow(_branchy())
    first = run(folder)
    assert first.status == "completed", first.error
    assert _statuses(first)["research/a"] == "skipped"
    assert first.task("review/check")["iterations"] == 2

    again = run(folder)
    assert again.status == "completed"
    assert again.context == first.context
    expected = {path: "cached" for path in _statuses(first)}
    expected["research/a"] = "skipped"
    assert _statuses(again) == expected
    assert again.usage["model_calls"] == 0
    assert again.task("review/check")["iterations"] == 2
    assert again.task("review")["iterations"] == 2

    through_prefect = run(folder, options=RunOptions(restore=False))
    assert _rows(through_prefect) == _rows(again)
    assert through_prefect.context == again.context

    runs = asyncio.run(recorded_task_runs(again.flow_run_id, 1))
    assert len(runs) == 1, [r.name for r in runs]
    assert runs[0].state.name == "Cached"
    assert "restored from checkpoints" in runs[0].name
    artifact = next(
        a for a in asyncio.run(_artifacts(again.flow_run_id)) if "restored" in (a.key or "")
    )
    stored = {p.name for p in (folder / ".folpipe" / "results").iterdir()}
    for path in ("plan", "research/c", "review/check[2]", "graph/y", "research (first pass)"):
        assert f"`{path}`" in artifact.data, path
    keys = [line.split("|")[3].strip().strip("`") for line in artifact.data.splitlines()[6:]]
    cached_keys = [key for key in keys if key != "-"]
    assert cached_keys and set(cached_keys) <= stored
    assert "| `research/a` | skipped |" in artifact.data


def test_a_changed_leaf_reruns_only_itself_and_what_reads_its_output(make_workflow, run):
    files = {
        "task.yaml": {"name": "edited"},  # parallel: two independent branches
        "replies.yaml": {"default": "ok", "tasks": {"left/l1": [{"echo": True}]}},
        "subtasks/left/task.yaml": {"subtasks": {"execution_type": "sequential"}},
        "subtasks/left/subtasks/10_l1/task.yaml": {"name": "l1"},
        "subtasks/left/subtasks/10_l1/instructions.md": "Version one.",
        "subtasks/left/subtasks/20_l2/task.yaml": {"name": "l2"},
        "subtasks/left/subtasks/20_l2/instructions.md": "After l1 (reads its answer).",
        "subtasks/left/subtasks/30_l3/task.yaml": {"name": "l3", "input": {"optional": ["x"]}},
        "subtasks/left/subtasks/30_l3/instructions.md": "Reads only x.",
        "subtasks/right/task.yaml": {"subtasks": {"execution_type": "sequential"}},
        "subtasks/right/subtasks/10_r1/instructions.md": "R1.",
        "subtasks/right/subtasks/20_r2/instructions.md": "R2.",
    }
    folder = make_workflow(files)
    first = run(folder)
    assert first.status == "completed", first.error
    (folder / "subtasks/left/subtasks/10_l1/instructions.md").write_text("Version two.")

    edited = run(folder)
    assert edited.status == "completed", edited.error
    assert "Version two." in edited.context["l1"]
    statuses = _statuses(edited)
    assert statuses["left/l1"] == statuses["left/l2"] == "completed"
    assert statuses["left/l3"] == "cached"  # its input does not include l1's answer
    assert statuses["right"] == statuses["right/r1"] == statuses["right/r2"] == "cached"
    assert edited.usage["model_calls"] == 2
    settled = run(folder, options=RunOptions(restore=False))  # Prefect's cache agrees
    assert set(_statuses(settled).values()) == {"cached"}
    assert settled.context == edited.context

    runs = asyncio.run(recorded_task_runs(edited.flow_run_id, 4))
    names = sorted(r.name for r in runs)
    assert "left/l1" in names and "left/l2" in names
    assert "right/r1" not in names and "left/l3" not in names
    restored = [r for r in runs if "restored from checkpoints" in r.name]
    assert restored and all(r.state.name == "Cached" for r in restored)


def test_a_chain_edit_that_keeps_the_answer_reruns_that_leaf_alone(make_workflow, run):
    files: dict[str, Any] = {
        "task.yaml": {"name": "chain", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {"default": "ok"},
    }
    for i in range(6):
        files[f"subtasks/{i:02d}_step/task.yaml"] = {"name": f"step_{i}"}
        files[f"subtasks/{i:02d}_step/instructions.md"] = f"Step {i}."
    folder = make_workflow(files)
    assert run(folder).status == "completed"
    (folder / "subtasks/03_step/instructions.md").write_text("Step three, reworded.")
    edited = run(folder)
    statuses = _statuses(edited)
    assert statuses["step_3"] == "completed"
    assert all(statuses[f"step_{i}"] == "cached" for i in (0, 1, 2, 4, 5))
    runs = asyncio.run(recorded_task_runs(edited.flow_run_id, 3))
    assert sorted(r.name for r in runs if "restored" not in r.name) == ["step_3"]
    assert len([r for r in runs if "restored" in r.name]) == 2  # before it, and after it


def test_fresh_and_a_failed_task_run_through_prefect(make_workflow, run):
    files = {
        "task.yaml": {"name": "resumed", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {"default": "ok", "tasks": {"last": [{"error": "auth"}]}},
        "subtasks/10_a/instructions.md": "A.",
        "subtasks/20_b/instructions.md": "B.",
        "subtasks/30_last/instructions.md": "Last.",
    }
    folder = make_workflow(files)
    assert run(folder).status == "failed"
    (folder / "replies.yaml").write_text("default: ok\n")
    resumed = run(folder)
    assert resumed.status == "completed"
    assert _statuses(resumed) == {
        "": "completed",
        "a": "cached",
        "b": "cached",
        "last": "completed",
    }
    assert resumed.usage["model_calls"] == 1
    fresh = run(folder, fresh=True)
    assert set(_statuses(fresh).values()) == {"completed"}
    assert fresh.usage["model_calls"] == 3


@pytest.mark.parametrize("seed", [3, 5, 7])
def test_random_trees_restore_exactly_what_prefects_cache_would(tmp_path, run, seed):
    folder = trees.random_tree(tmp_path / f"random-{seed}", seed)
    first = run(folder)
    restored = run(folder)
    through_prefect = run(folder, options=RunOptions(restore=False))
    assert first.status == restored.status == through_prefect.status
    assert restored.context == first.context == through_prefect.context
    assert _rows(restored) == _rows(through_prefect)
    assert set(_statuses(restored).values()) <= {"cached", "skipped", "completed"}
    assert restored.usage["model_calls"] == 0


def test_a_gated_target_is_not_restored_past_its_gate(make_workflow, run):
    """A root behind an approval gate: the cached re-run still passes the gate (its answer in
    the context, as a run through Prefect) and restores what is below it."""
    folder = make_workflow(
        {
            "task.yaml": {
                "name": "gated",
                "subtasks": {"execution_type": "sequential"},
                "approval": {"prompt": "Go?", "input": {"approved": "bool"}},
            },
            "replies.yaml": {"default": "ok"},
            "subtasks/a/instructions.md": "A.",
            "subtasks/b/instructions.md": "B.",
        }
    )
    answers = RunOptions(approvals={"": {"approved": "yes"}})
    first = run(folder, options=answers)
    assert first.status == "completed", first.error
    assert first.context.get("approved") is True
    again = run(folder, options=RunOptions(approvals={"": {"approved": "yes"}}))
    assert again.status == "completed", again.error
    assert again.context == first.context
    assert {row["path"]: row["status"] for row in again.tasks}["a"] == "cached"
