"""``folpipe run`` / ``run-task`` as a user runs them against the session server: subprocesses
where the process matters (one JSON document on its stdout, its exit, a resume in a new
process), in-process (tests/inprocess.py) where only what it prints and exits with does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.prefect

RUN_KEYS = {"status", "flow_run_id", "context", "tasks", "usage"}
TASK_KEYS = {
    "path",
    "name",
    "status",
    "attempts",
    "iterations",
    "model_calls",
    "replayed_calls",
    "tool_calls",
    "usage",
    "duration_s",
    "error",
}


def folpipe(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


def in_process(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``folpipe(env, ...)`` in this process, with the environment variables it adds."""
    from inprocess import folpipe_in_process

    extra = {k: v for k, v in env.items() if os.environ.get(k) != v and k != "PREFECT_API_URL"}
    return folpipe_in_process(*map(str, args), api_url=env["PREFECT_API_URL"], env=extra)


def write(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content)
        target.write_text(text, encoding="utf-8")
    return root


def pipeline(root: Path, review: Any = "fine") -> Path:
    return write(
        root,
        {
            "task.yaml": {
                "name": "cli-pipeline",
                "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
                "subtasks": {"execution_type": "sequential"},
                "context": {"audience": "engineers"},
            },
            "replies.yaml": {
                "default": "ok",
                "tasks": {"draft": [{"output": {"text": "hello"}}], "review": [review]},
            },
            "subtasks/10_draft/instructions.md": "Draft for {audience}.",
            "subtasks/10_draft/task.yaml": {"output": ["text"]},
            "subtasks/20_optional/instructions.md": "Only when asked.",
            "subtasks/20_optional/task.yaml": {"conditions": {"skip_if": "not context.extra"}},
            "subtasks/30_review/instructions.md": "Review.",
        },
    )


def test_json_document_shape_and_exit_zero(tmp_path, cli_env):
    wf = pipeline(tmp_path / "wf")
    proc = folpipe(cli_env, "run", wf, "--json", "--context", '{"topic": "prefect"}')
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # exactly one JSON document, nothing else on stdout
    assert set(doc) == RUN_KEYS
    assert doc["status"] == "completed"
    assert doc["context"]["topic"] == "prefect" and doc["context"]["audience"] == "engineers"
    assert doc["context"]["text"] == "hello"
    assert [t["path"] for t in doc["tasks"]] == ["", "draft", "optional", "review"]
    for entry in doc["tasks"]:
        assert set(entry) == TASK_KEYS
        assert set(entry["usage"]) == {"input_tokens", "output_tokens"}
    assert doc["tasks"][2]["status"] == "skipped"
    assert set(doc["usage"]) == {"input_tokens", "output_tokens", "model_calls", "replayed_calls"}
    assert doc["usage"]["model_calls"] == 2
    assert "Traceback" not in proc.stderr


def test_a_process_that_exits_right_after_its_run_still_writes_every_artifact(tmp_path, cli_env):
    """Artifacts are written in the background; process exit flushes them before it ends."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    proc = folpipe(cli_env, "run", pipeline(tmp_path / "wf"), "--json")
    assert proc.returncode == 0, proc.stderr
    flow_run_id = json.loads(proc.stdout)["flow_run_id"]

    async def read() -> list[Any]:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])
                )
            )

    keys = {artifact.key for artifact in asyncio.run(read())}
    assert keys == {
        "cli-pipeline-draft",
        "cli-pipeline-review",
        "cli-pipeline-summary",
        "cli-pipeline-cost",
    }


def test_failed_run_exits_one_and_resume_in_a_new_process_reuses_checkpoints(tmp_path, cli_env):
    wf = pipeline(tmp_path / "wf", review={"error": "auth"})
    first = folpipe(cli_env, "run", wf, "--json")
    assert first.returncode == 1, first.stderr
    doc = json.loads(first.stdout)
    assert doc["status"] == "failed"
    review = next(t for t in doc["tasks"] if t["path"] == "review")
    assert review["status"] == "failed" and "auth" in review["error"]
    assert "Traceback" not in first.stderr
    replies = yaml.safe_load((wf / "replies.yaml").read_text())
    replies["tasks"]["review"] = ["fixed"]
    (wf / "replies.yaml").write_text(yaml.safe_dump(replies))

    resumed = folpipe(cli_env, "resume", wf, "--json")
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(resumed.stdout)
    statuses = {t["path"]: t["status"] for t in doc["tasks"]}
    assert statuses["draft"] == "cached" and statuses["review"] == "completed"
    assert doc["usage"]["model_calls"] == 1

    again = in_process(cli_env, "run", wf)
    assert again.returncode == 0, again.stderr
    # root, draft and review ran (optional was skipped) and all three came from checkpoints
    # (counted as folpipe status counts them: one per task, the skipped one too)
    assert "3 of 4 tasks from checkpoints; 1 skipped (--fresh to re-run)" in again.stdout


def test_resume_without_a_failed_run_is_a_usage_error(tmp_path, cli_env):
    wf = pipeline(tmp_path / "wf")
    proc = in_process(cli_env, "resume", wf)
    assert proc.returncode == 2
    assert "FP404" in proc.stderr and "Traceback" not in proc.stderr


def test_invalid_workflow_and_bad_context_exit_two_without_traceback(tmp_path, cli_env):
    broken = write(tmp_path / "broken", {"task.yaml": {"name": "b", "bogus_key": 1}})
    proc = in_process(cli_env, "run", broken, "--json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and doc["errors"]
    assert all(e["code"].startswith("FP") for e in doc["errors"])
    assert "Traceback" not in proc.stderr

    wf = pipeline(tmp_path / "wf")
    proc = in_process(cli_env, "run", wf, "--context", "{not json")
    assert proc.returncode == 2
    assert "FP402" in proc.stderr and "Traceback" not in proc.stderr


def test_run_task_runs_one_folder_in_its_workflow_context(tmp_path, cli_env):
    wf = pipeline(tmp_path / "wf")
    proc = in_process(
        cli_env, "run-task", wf / "subtasks" / "10_draft", "--json", "--context", '{"k": 1}'
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [t["path"] for t in doc["tasks"]] == ["draft"]
    assert doc["context"]["text"] == "hello"
    assert doc["context"]["audience"] == "engineers" and doc["context"]["k"] == 1


@pytest.mark.parametrize("columns", [None, "80"])
def test_human_output_has_a_summary_table(tmp_path, cli_env, columns):
    """Whole statuses and the flow run's id on one line, on an 80-column terminal too
    (there the empty columns are left out rather than every cell cut to "compl…")."""
    wf = pipeline(tmp_path / "wf")
    env = dict(cli_env, **({"COLUMNS": columns} if columns else {}))
    proc = in_process(env, "run", wf)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    rows = {line.split()[1]: line.split()[3] for line in lines if line.startswith("│")}
    assert rows == {
        "(root)": "completed",
        "draft": "completed",
        "optional": "skipped",
        "review": "completed",
    }
    assert "…" not in proc.stdout
    assert re.search(r"· flow run [0-9a-f-]{36}$", proc.stdout.strip())
    if columns:  # the table fits; the last line is left for the terminal to wrap
        assert max(len(line) for line in lines if line[:1] in "┏┃┡│└") <= 80


def test_record_writes_a_cassette(tmp_path, cli_env):
    wf = pipeline(tmp_path / "wf")
    cassette = tmp_path / "calls.yaml"
    proc = in_process(cli_env, "run", wf, "--json", "--record", cassette)
    assert proc.returncode == 0, proc.stderr
    assert cassette.is_file() and cassette.stat().st_size > 0
