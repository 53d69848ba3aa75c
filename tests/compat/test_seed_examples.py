"""folpipe 0.1.8's three examples run unmodified (point 10): fetched from its sdist at test
time, run with the CLI from the folder holding ``examples/`` (as 0.1.8's README does) with
our scripted replies (tests/fixtures/compat/)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.prefect

REPLIES = Path(__file__).parent.parent / "fixtures" / "compat"


def folpipe(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``folpipe ARGS`` run from ``cwd``, in this process (tests/inprocess.py): the examples'
    relative paths resolve against the current directory as they do in a shell."""
    from inprocess import folpipe_in_process

    here = Path.cwd()
    os.chdir(cwd)
    try:
        return folpipe_in_process(*args, api_url=env["PREFECT_API_URL"])
    finally:
        os.chdir(here)


def run_example(cwd: Path, env: dict[str, str], name: str, *extra: str) -> dict[str, Any]:
    validated = folpipe(cwd, env, "validate", f"examples/{name}", "--json")
    assert json.loads(validated.stdout)["ok"], validated.stdout
    replies = str(REPLIES / f"{name}.yaml")
    args = ["run", f"examples/{name}", "--provider", "scripted", "--replies", replies, "--json"]
    done = folpipe(cwd, env, *args, *extra)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout)


def test_hello_world(seed_examples: Path, cli_env: dict[str, str]) -> None:
    doc = run_example(seed_examples.parent, cli_env, "hello_world")
    assert doc["status"] == "completed"
    assert doc["context"]["greeting"] == "Hello! Nice to meet you."
    assert doc["usage"]["model_calls"] == 1


def test_cv_pipeline_writes_its_pdf(seed_examples: Path, cli_env: dict[str, str]) -> None:
    context = {
        "url": "https://jobs.example.com/123",
        "cv_info_path": "examples/cv_pipeline/candidate_info.txt",
    }
    doc = run_example(
        seed_examples.parent, cli_env, "cv_pipeline", "--context", json.dumps(context)
    )
    assert doc["status"] == "completed"
    statuses = {task["path"]: task["status"] for task in doc["tasks"]}
    assert set(statuses.values()) == {"completed"}
    final_cv = doc["context"]["final_cv"]
    assert isinstance(final_cv, str) and final_cv.startswith("Jane Doe")  # FP158's rule
    models = {task["path"]: task for task in doc["tasks"]}
    assert models["generate_pdf"]["tool_calls"] == 2
    pdf = seed_examples / "cv_pipeline" / "output" / "cv.pdf"
    data = pdf.read_bytes()
    # fpdf2 (the example's dependency) writes PDF 1.3; the replies' hand-made fallback 1.4
    assert data.startswith(b"%PDF-1.3"), data[:20]
    assert data.rstrip().endswith(b"%%EOF")


def test_release_pipeline_reports_the_approval(
    seed_examples: Path, cli_env: dict[str, str]
) -> None:
    doc = run_example(seed_examples.parent, cli_env, "release_pipeline")
    assert doc["status"] == "completed"
    statuses = {task["path"]: task["status"] for task in doc["tasks"]}
    assert statuses["deploy_production"] == "completed"  # skip_if saw the approval
    assert statuses["staging/review"] == "completed"
    output = seed_examples / "release_pipeline" / "output"
    report = json.loads((output / "release_report.json").read_text())
    assert report["staging"]["approved"] is True
    assert report["version"] == "1.2.0"
    assert report["errors"] == []
    assert (output / "release-1.2.0.zip").is_file()
    assert (output / "production_manifest.json").is_file()
    assert (output / "deployment_notification.txt").is_file()
    assert (seed_examples / "release_pipeline" / ".staging" / "manifest.json").is_file()


def test_release_pipeline_names_a_failed_check_in_errors_as_0_1_8_did(
    seed_examples: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """``dependency_audit`` (``on_failure: skip``, nested in pre_checks) fails: its ``_errors``
    entry says ``task: dependency_audit`` (0.1.8's name), ``path: pre_checks/dependency_audit``;
    the root post_run hook copies ``_errors`` into release_report.json."""
    import yaml

    replies = yaml.safe_load((REPLIES / "release_pipeline.yaml").read_text())
    replies["tasks"]["dependency_audit"] = [{"error": "auth"}]
    failing = tmp_path / "release_pipeline_audit_fails.yaml"
    failing.write_text(yaml.safe_dump(replies), encoding="utf-8")
    args = ["run", "examples/release_pipeline", "--provider", "scripted", "--replies"]
    done = folpipe(seed_examples.parent, cli_env, *args, str(failing), "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    [entry] = doc["context"]["_errors"]
    assert (entry["task"], entry["path"]) == ("dependency_audit", "pre_checks/dependency_audit")
    output = seed_examples / "release_pipeline" / "output"
    report = json.loads((output / "release_report.json").read_text())
    assert [e["task"] for e in report["errors"]] == ["dependency_audit"]
