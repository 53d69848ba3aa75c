"""Checkpoint scope (docs/running.md, "Checkpoints and resume"): how far a run's checkpoints
reach. Within a run's lineage they are always reused; across runs by local runs (the dev loop)
and, only when the workflow or the run opts in, by deployment runs; ``--fresh`` starts a new
lineage that also refreshes what later runs reuse. Deployment runs on a real server:
``tests/deploy/test_checkpoint_scope_server.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import make_task

from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.plan._scope import CheckpointScope, describe
from prefect_folpipe.workflow.tree import EffectiveSettings


def _task(**settings: object):
    return make_task("t", "t", settings=EffectiveSettings(**settings))  # type: ignore[arg-type]


def test_the_scope_of_each_kind_of_run() -> None:
    plain, opted, never = _task(), _task(cache_across_runs=True), _task(cache_across_runs=False)
    local = CheckpointScope(lineage="run-1")
    deployed = CheckpointScope(lineage="run-2", deployment=True)
    # the dev loop reuses across runs; a deployment run only within its own lineage
    assert local.salt(plain) == "" and deployed.salt(plain) == "lineage:run-2"
    # settings.cache.across_runs opts a deployment in (or a local run out)
    assert deployed.salt(opted) == "" and local.salt(never) == "lineage:run-1"
    # the run's own reuse_checkpoints parameter wins over the settings
    assert CheckpointScope("run-3", True, across_runs=True).salt(plain) == ""
    assert CheckpointScope("run-3", False, across_runs=False).salt(opted) == "lineage:run-3"
    # --fresh: its own lineage, and it refreshes the shared checkpoint a later run reads
    fresh = CheckpointScope(lineage="run-4", fresh=True)
    assert fresh.salt(plain) == "lineage:run-4" and fresh.refreshes_shared(plain)
    assert not CheckpointScope("run-5", True, fresh=True).refreshes_shared(plain)
    # a ttl ages only the shared checkpoints
    aged = _task(cache_expiration=60.0)
    assert local.ttl(aged) == 60.0 and deployed.ttl(aged) is None


def test_validate_says_how_far_checkpoints_reach() -> None:
    assert "deployment and scheduled runs re-run every task" in describe(EffectiveSettings())
    opted = describe(EffectiveSettings(cache_across_runs=True, cache_expiration=86400.0))
    assert "deployment and scheduled runs included, each for 1d" in opted
    assert "off" in describe(EffectiveSettings(cache=False))


def _counter_workflow(make_workflow):
    """Task ``a`` answers with how many times it ran (a pre_run hook counts executions); ``b``
    fails while ``fail-b`` exists next to the workflow."""
    count = (
        "from pathlib import Path\n"
        "def run(ctx, task):\n"
        "    log = Path(ctx.workflow_root) / 'runs-of-a'\n"
        "    log.write_text(log.read_text() + 'x' if log.exists() else 'x')\n"
        "    ctx.context['n'] = len(log.read_text())\n"
    )
    gate = (
        "from pathlib import Path\n"
        "def run(ctx, task):\n"
        "    if (Path(ctx.workflow_root) / 'fail-b').exists():\n"
        "        raise RuntimeError('b is blocked')\n"
    )
    return make_workflow(
        {
            "task.yaml": {
                "name": "scope",
                "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
                "subtasks": {"execution_type": "sequential"},
            },
            "replies.yaml": {"tasks": {"a": [{"echo": True}]}, "default": "ok"},
            "subtasks/10_a/instructions.md": "Count.",
            "subtasks/10_a/hooks/pre_run.py": count,
            "subtasks/20_b/instructions.md": "Use a.",
            "subtasks/20_b/hooks/pre_run.py": gate,
        }
    )


@pytest.mark.prefect
def test_fresh_refreshes_what_later_local_runs_reuse(make_workflow, run) -> None:
    wf = _counter_workflow(make_workflow)
    first = run(wf)
    assert '"n": 1' in first.context["a"]
    assert {row["status"] for row in run(wf).tasks} == {"cached"}  # the dev loop reuses
    fresh = run(wf, fresh=True)
    assert {row["status"] for row in fresh.tasks} == {"completed"}
    assert '"n": 2' in fresh.context["a"]
    after = run(wf)  # reuses what the fresh run wrote, not the first run's answer
    assert {row["status"] for row in after.tasks} == {"cached"}
    assert after.context["a"] == fresh.context["a"]


@pytest.mark.prefect
def test_resuming_a_fresh_run_stays_in_its_lineage(make_workflow, prefect_harness) -> None:
    """A task that failed in a fresh run runs again on resume, even where an older
    checkpoint of it exists; what the fresh run finished is reused. (The CLI in-process:
    tests/inprocess.py.)"""
    from inprocess import folpipe_in_process

    wf = _counter_workflow(make_workflow)

    def folpipe(*args: str) -> dict:
        done = folpipe_in_process(*args, str(wf), "--json", api_url=prefect_harness)
        assert "Traceback" not in done.stderr, done.stderr
        return json.loads(done.stdout)

    assert folpipe("run")["status"] == "completed"  # a and b checkpointed (n = 1)
    (wf / "fail-b").touch()
    fresh = folpipe("run", "--fresh")
    assert (fresh["status"], fresh["tasks"][2]["status"]) == ("failed", "failed")
    (wf / "fail-b").unlink()
    resumed = folpipe("resume")
    statuses = {row["path"]: row["status"] for row in resumed["tasks"]}
    assert statuses == {"": "completed", "a": "cached", "b": "completed"}
    assert '"n": 2' in resumed["context"]["a"]  # the fresh run's a, not the first run's
    record = json.loads(sorted((wf / ".folpipe" / "runs").glob("*.json"))[-1].read_text())
    assert record["lineage"] == fresh["flow_run_id"] and record["fresh"] is True


@pytest.mark.prefect
def test_a_run_that_opts_out_reuses_nothing_across_runs(make_workflow, run) -> None:
    wf = _counter_workflow(make_workflow)
    run(wf)
    alone = run(wf, options=RunOptions(across_runs=False))
    assert {row["status"] for row in alone.tasks} == {"completed"}
    assert '"n": 2' in alone.context["a"]
    assert '"n": 1' in run(wf).context["a"]  # its lineage keys left the shared ones alone


def test_cache_settings_cascade(tmp_path: Path) -> None:
    from builders import write_workflow

    from prefect_folpipe.validate import load_workflow

    wf = write_workflow(
        tmp_path / "wf",
        {
            "task.yaml": {"name": "c", "settings": {"cache": {"across_runs": True, "ttl": "12h"}}},
            "subtasks/a/instructions.md": "A.",
            "subtasks/b/instructions.md": "B.",
            "subtasks/b/task.yaml": {"settings": {"cache": {"ttl": 90}}},
            "subtasks/c/instructions.md": "C.",
            "subtasks/c/task.yaml": {"settings": {"cache": False}},
        },
    )
    tasks = {t.path: t.settings for t in load_workflow(wf).tasks()}
    assert (tasks["a"].cache_across_runs, tasks["a"].cache_expiration) == (True, 43200.0)
    assert (tasks["b"].cache_across_runs, tasks["b"].cache_expiration) == (True, 90.0)
    assert tasks["c"].cache is False
