"""Checkpoints: cached re-runs, invalidation by edit, --fresh, resume after a failure."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.prefect


def _pipeline(review_reply: object) -> dict:
    return {
        "task.yaml": {"name": "ckpt", "subtasks": {"execution_type": "sequential"}},
        "replies.yaml": {
            "tasks": {
                "fetch": [{"output": {"data": "raw"}}],
                "clean": ["cleaned"],
                "review": [review_reply],
            }
        },
        "subtasks/10_fetch/instructions.md": "Fetch.",
        "subtasks/10_fetch/task.yaml": {"output": ["data"]},
        "subtasks/20_clean/instructions.md": "Clean.",
        "subtasks/30_review/instructions.md": "Review.",
    }


def test_second_run_reuses_every_checkpoint(make_workflow, run):
    wf = make_workflow(_pipeline("looks good"))
    first = run(wf)
    assert first.status == "completed" and first.usage["model_calls"] == 3
    second = run(wf)
    assert second.status == "completed"
    assert second.context == first.context
    assert {row["path"]: row["status"] for row in second.tasks} == {
        "": "cached",
        "fetch": "cached",
        "clean": "cached",
        "review": "cached",
    }
    assert second.usage["model_calls"] == 0
    assert all(row["model_calls"] == 0 and row["attempts"] == 0 for row in second.tasks[1:])
    assert (wf / ".folpipe" / "results").is_dir()


def test_resume_after_failure_runs_only_the_failed_task(make_workflow, run):
    wf = make_workflow(_pipeline({"error": "auth"}))
    first = run(wf)
    assert first.status == "failed"
    assert first.task("review")["status"] == "failed"
    (wf / "replies.yaml").write_text(
        "tasks:\n  review: ['fixed']\n  fetch: [{output: {data: raw}}]\n  clean: [cleaned]\n"
    )
    second = run(wf)
    assert second.status == "completed"
    assert second.task("fetch")["status"] == "cached"
    assert second.task("clean")["status"] == "cached"
    assert second.task("review")["status"] == "completed"
    assert second.usage["model_calls"] == 1


def test_editing_instructions_reruns_that_task_and_its_consumers_only(make_workflow, run):
    wf = make_workflow(_pipeline("ok"))
    run(wf)
    (wf / "subtasks/20_clean/instructions.md").write_text("Clean harder.")
    (wf / "replies.yaml").write_text(
        "tasks:\n  fetch: [{output: {data: raw}}]\n  clean: [cleaner]\n  review: [ok]\n"
    )
    again = run(wf)
    statuses = {row["path"]: row["status"] for row in again.tasks}
    assert statuses["fetch"] == "cached"
    assert statuses["clean"] == "completed"
    assert statuses["review"] == "completed"  # it consumes clean's changed output
    assert again.context["clean"] == "cleaner"


def test_unchanged_output_keeps_downstream_cached(make_workflow, run):
    wf = make_workflow(_pipeline("ok"))
    run(wf)
    (wf / "subtasks/20_clean/instructions.md").write_text("Clean, differently worded.")
    again = run(wf)
    statuses = {row["path"]: row["status"] for row in again.tasks}
    assert statuses["clean"] == "completed"
    assert statuses["review"] == "cached"  # same input context as before


def test_fresh_ignores_checkpoints(make_workflow, run):
    wf = make_workflow(_pipeline("ok"))
    run(wf)
    again = run(wf, fresh=True)
    assert all(row["status"] == "completed" for row in again.tasks)
    assert again.usage["model_calls"] == 3


def test_loop_resumes_mid_loop(make_workflow, run):
    files = {
        "task.yaml": {
            "name": "loopresume",
            "subtasks": {
                "execution_type": "loop",
                "until": "context.approved",
                "max_iterations": 3,
            },
        },
        "replies.yaml": {
            "tasks": {
                "write": [{"output": {"draft": "d1"}}, {"output": {"draft": "d2"}}],
                "review": [{"output": {"approved": False}}, {"error": "auth"}],
            }
        },
        "subtasks/10_write/instructions.md": "Write.",
        "subtasks/10_write/task.yaml": {"output": ["draft"]},
        "subtasks/20_review/instructions.md": "Review.",
        "subtasks/20_review/task.yaml": {"output": ["approved"]},
    }
    wf = make_workflow(files)
    assert run(wf).status == "failed"
    (wf / "replies.yaml").write_text(
        "tasks:\n  write: [{output: {draft: d1}}, {output: {draft: d2}}]\n"
        "  review: [{output: {approved: false}}, {output: {approved: true}}]\n"
    )
    second = run(wf)
    assert second.status == "completed"
    assert second.context["draft"] == "d2"
    # write[1] and write[2] are reused (their replies did not change: d2); review's replies
    # did, which is part of its checkpoint key (issue 11 point 8), so review[1] and review[2]
    # run again
    assert second.usage["model_calls"] == 2
    assert second.task("write")["model_calls"] == 0


def test_unserialisable_output_is_an_error_not_a_silent_missing_checkpoint(make_workflow, run):
    files = {
        "task.yaml": {"name": "unser"},
        "subtasks/odd/instructions.md": "Odd.",
        "subtasks/odd/hooks/post_run.py": (
            "def run(ctx, task):\n    ctx.context['handle'] = object()\n"
        ),
    }
    result = run(make_workflow(files))
    assert result.status == "failed"
    assert "FP515" in result.task("odd")["error"] or "serial" in result.task("odd")["error"]


def test_disabled_cache_always_reruns(make_workflow, run):
    files = _pipeline("ok")
    files["task.yaml"] = {**files["task.yaml"], "settings": {"cache": False}}
    wf = make_workflow(files)
    run(wf)
    again = run(wf)
    assert again.usage["model_calls"] == 3
