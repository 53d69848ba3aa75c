"""``--from TASK``: the task and what runs after it run again, the rest is restored."""

from __future__ import annotations

import pytest
from learn_chain import chain, write

from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.compile.rerun import rerun_passes, resolve_targets
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.validate import load_workflow

pytestmark = pytest.mark.prefect


def statuses(result):
    return {row["path"]: row["status"] for row in result.tasks if row["path"]}


def test_from_draft_reruns_draft_and_publish_and_restores_research(tmp_path, run):
    wf = chain(tmp_path / "wf")
    first = run(wf)
    assert first.status == "completed"
    assert set(statuses(first).values()) == {"completed"}

    again = run(wf, rerun_from=["draft"])
    assert again.status == "completed", again.error
    assert statuses(again) == {"research": "cached", "draft": "completed", "publish": "completed"}
    assert again.usage["model_calls"] == 2  # asked again: not replayed from the journal
    assert again.usage["replayed_calls"] == 0

    passes = list((wf / ".folpipe" / "runs" / "passes").glob("*.json"))
    assert len(passes) == 2 and all(p.stat().st_mode & 0o077 == 0 for p in passes)

    # the re-run's answers are the shared checkpoints now: a plain run restores everything
    plain = run(wf)
    assert set(statuses(plain).values()) == {"cached"}


def test_from_takes_a_path_or_folder_and_works_with_context(tmp_path, run):
    wf = chain(tmp_path / "wf")
    assert run(wf, {"topic": "graphs"}).status == "completed"
    options = RunOptions(rerun_from=(str(wf / "subtasks" / "30_publish"),))
    again = run(wf, {"topic": "graphs"}, options=options)
    assert again.status == "completed", again.error
    assert statuses(again) == {"research": "cached", "draft": "cached", "publish": "completed"}
    assert again.context["topic"] == "graphs"


def test_from_without_earlier_checkpoints_is_a_coded_error_naming_them(tmp_path, run):
    wf = chain(tmp_path / "wf")
    result = run(wf, rerun_from="publish")
    assert result.status == "failed"
    assert isinstance(result.error, ConfigError) and result.error.code == "FP406"
    assert "research" in str(result.error) and "draft" in str(result.error)
    assert "publish," not in str(result.error)
    # another context is another input: its earlier tasks never ran either
    assert run(wf).status == "completed"
    other = run(wf, {"topic": "other"}, rerun_from="draft")
    assert other.error is not None and other.error.code == "FP406"
    assert "research" in str(other.error)


def test_unknown_task_is_fp405_with_a_suggestion(tmp_path):
    workflow = load_workflow(chain(tmp_path / "wf"))
    with pytest.raises(ConfigError) as caught:
        resolve_targets(workflow, ["drafts"])
    assert caught.value.code == "FP405" and "draft" in (caught.value.hint or "")


def test_rerun_set_follows_waves_graphs_and_ancestors(tmp_path):
    wf = write(
        tmp_path / "wf",
        {
            "task.yaml": {"name": "g", "subtasks": {"execution_type": "sequential"}},
            "instructions.md": "Sum up.",
            "subtasks/10_a/instructions.md": "a",
            "subtasks/20_g/task.yaml": {"subtasks": {"execution_type": "graph"}},
            "subtasks/20_g/subtasks/x/instructions.md": "x",
            "subtasks/20_g/subtasks/y/instructions.md": "y",
            "subtasks/20_g/subtasks/y/task.yaml": {"depends_on": ["x"]},
            "subtasks/20_g/subtasks/z/instructions.md": "z",
            "subtasks/30_c/instructions.md": "c",
        },
    )
    workflow = load_workflow(wf)
    plan = build_plan(workflow)
    passes = rerun_passes(plan, ["g/x"])
    assert {"g/x", "g/y", "c", "|final"} <= passes
    assert not {"a", "g/z", "g", ""} & passes


def test_a_from_run_reports_what_it_reran_spent_and_saved(tmp_path, run):
    wf = chain(tmp_path / "wf")
    assert run(wf).status == "completed"
    again = run(wf, rerun_from="publish")
    report = again.rerun
    assert report["rerun"] == ["publish"] and report["restored"] == ["research", "draft"]
    assert report["model_calls"] == 1
    assert report["saved_model_calls"] == 2 and report["saved_tokens"] > 0
    assert again.to_dict()["rerun"] == report
    assert "rerun" not in run(wf).to_dict()


def test_the_run_line_of_a_from_run(tmp_path, prefect_harness):
    from inprocess import folpipe_in_process

    wf = chain(tmp_path / "wf")

    def folpipe(*args):
        return folpipe_in_process(*map(str, args), api_url=prefect_harness)

    assert folpipe("run", wf, "--json").returncode == 0
    proc = folpipe("run", wf, "--from", "draft")
    assert proc.returncode == 0, proc.stderr
    assert "--from draft: 2 tasks re-ran, 1 from checkpoints · 2 paid calls" in proc.stdout
    assert "saved 1 call," in proc.stdout
    missing = folpipe("run", wf, "--from", "draft", "--context", '{"topic": "new"}', "--json")
    assert missing.returncode == 2 and "FP406" in missing.stdout


def test_plan_from_shows_what_a_from_run_would_do(tmp_path, run):
    import json

    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    wf = chain(tmp_path / "wf")
    assert run(wf).status == "completed"
    done = CliRunner().invoke(cli, ["plan", str(wf), "--from", "draft", "--json"])
    assert done.exit_code == 0, done.output
    steps = {s["path"]: s for s in json.loads(done.stdout)["steps"]}
    assert steps["research"]["status"] == "checkpoint"
    assert steps["draft"]["status"] == "runs" and steps["draft"]["reasons"] == ["--from"]
    assert steps["publish"]["status"] == "runs"
