"""``folpipe run`` and approval gates as a user meets them: a terminal asks (stdin is a TTY),
``--approve`` answers ahead for CI, and without either the gate fails with a coded error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import write_workflow

pytestmark = pytest.mark.prefect

FILES = {
    "task.yaml": {
        "name": "gated",
        "subtasks": {"execution_type": "sequential"},
        "context": {"version": "2.0"},
    },
    "subtasks/10_ship/instructions.md": "Ship it.",
    "subtasks/10_ship/task.yaml": {
        "approval": {
            "prompt": "Ship release {{ context.version }}?",
            "input": {"approved": "bool", "comment": "str"},
        },
        "conditions": {"skip_if": "not context.approved"},
    },
}


def _command(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "prefect_folpipe", "run", str(root), "--json", *args]


def test_a_terminal_is_asked_and_stdout_stays_one_json_document(tmp_path: Path, cli_env) -> None:  # type: ignore[no-untyped-def]
    root = write_workflow(tmp_path / "wf", FILES)
    leader, follower = os.openpty()  # stdin is a terminal; stdout and stderr are pipes
    try:
        process = subprocess.Popen(
            _command(root), stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=cli_env, text=True,
        )  # fmt: skip
        os.close(follower)
        os.write(leader, b"perhaps\nyes\nall good\n")  # one bad answer first: asked again
        out, err = process.communicate(timeout=240)
    finally:
        os.close(leader)
    assert process.returncode == 0, err[-3000:]
    document = json.loads(out)
    assert document["context"]["approved"] is True
    assert document["context"]["comment"] == "all good"
    assert "Ship release 2.0?" in err and "approved (yes/no)" in err and "yes or no" in err


def test_approve_answers_ahead_and_no_answer_is_a_coded_failure(
    tmp_path: Path, prefect_harness: str
) -> None:
    """In-process (tests/inprocess.py): stdin is not a terminal there either."""
    from inprocess import folpipe_in_process

    def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return folpipe_in_process(*_command(root, *args)[3:], api_url=prefect_harness)

    root = write_workflow(tmp_path / "wf", FILES)
    ahead = run(root, "--approve", "approved=no", "--approve", "ship:comment=wait for 2.1")
    assert ahead.returncode == 0, ahead.stderr[-3000:]
    document = json.loads(ahead.stdout)
    assert (document["context"]["approved"], document["context"]["comment"]) == (
        False,
        "wait for 2.1",
    )
    assert {row["path"]: row["status"] for row in document["tasks"]}["ship"] == "skipped"

    other = write_workflow(tmp_path / "other", FILES)
    nobody = run(other)
    assert nobody.returncode == 1
    failed = json.loads(nobody.stdout)
    ship = next(row for row in failed["tasks"] if row["path"] == "ship")
    assert ship["status"] == "failed" and "FP530" in ship["error"] and "--approve" in ship["error"]

    bad = run(other, "--approve", "approved")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "FP402"


def test_folpipe_test_cases_answer_gates(tmp_path: Path, prefect_harness) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    cases = [
        {
            "name": "approved ships",
            "models": {"default": "ok"},
            "approvals": {"ship": {"approved": True, "comment": "go"}},
            "expect": {"ran": ["ship"], "context": {"approved": True, "comment": "go"}},
        },
        {
            "name": "rejected does not ship",
            "models": {"default": "ok"},
            "approvals": {"ship": {"approved": False, "comment": "no"}},
            "expect": {"skipped": ["ship"], "context": {"approved": False}},
        },
        {
            "name": "unanswered fails the gate",
            "models": {"default": "ok"},
            "expect": {"status": "failed", "failed": ["ship"]},
        },
    ]
    root = write_workflow(tmp_path / "wf", {**FILES, "tests.yaml": {"cases": cases}})
    done = CliRunner().invoke(cli, ["test", str(root), "--json"])
    report = json.loads(done.stdout)
    assert done.exit_code == 0, report
    assert [case["ok"] for case in report["cases"]] == [True, True, True]

    wrong = [{"name": "no such gate", "approvals": {"nope": {"approved": True}}}]
    (root / "tests.yaml").write_text(json.dumps({"cases": wrong}))
    refused = CliRunner().invoke(cli, ["test", str(root), "--json"])
    assert refused.exit_code == 2
    assert json.loads(refused.stdout)["error"]["code"] == "FP181"
