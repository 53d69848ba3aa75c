"""Issue 31 point 7: ``--approve`` values that nothing uses are an error, and so is a repeated
key (FP407, exit 2, before the run starts: no Prefect, no model call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import SCRIPTED, write_workflow

from prefect_folpipe.cli._approve import check_approvals, parse_approvals
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.validate import load_workflow

FILES = {
    "task.yaml": {
        "name": "gated",
        "providers": SCRIPTED,
        "subtasks": {"execution_type": "sequential"},
    },
    "replies.yaml": {"default": "ok"},
    "subtasks/10_release/subtasks/ship/instructions.md": "Ship it.",
    "subtasks/10_release/subtasks/ship/task.yaml": {
        "approval": {"prompt": "Ship?", "input": {"approved": "bool", "comment": "str"}}
    },
    "subtasks/20_review/instructions.md": "Review.",
    "subtasks/20_review/task.yaml": {"approval": {"prompt": "Good?"}},  # {approved: bool}
    "subtasks/30_off/instructions.md": "Never runs.",
    "subtasks/30_off/task.yaml": {
        "enabled": False,
        "approval": {"prompt": "Off?", "input": {"budget": "int"}},
    },
}


@pytest.fixture(scope="module")
def workflow(tmp_path_factory: pytest.TempPathFactory) -> object:
    return load_workflow(write_workflow(tmp_path_factory.mktemp("gated") / "wf", FILES))


@pytest.mark.parametrize(
    "values",
    [
        ["approved=yes"],  # every gate with the key
        ["approved=yes", "comment=x"],  # comment: the ship gate only, still used
        ["ship:approved=yes", "release/ship:comment=x", "review:approved=no"],
        ["approved=yes", "ship:approved=no"],  # a task's answer over the general one
    ],
)
def test_values_a_gate_asks_for_are_accepted(workflow: object, values: list[str]) -> None:
    check_approvals(workflow, parse_approvals(values))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (["aproved=yes"], "aproved"),
        (["shipp:approved=yes"], "shipp:approved"),
        (["review:comment=x"], "review:comment"),  # review asks approved only
        (["off:budget=3"], "off:budget"),  # a disabled gate never asks
        (["approved=yes", "budget=3", "ship:nope=1"], "budget, ship:nope"),
    ],
)
def test_a_value_no_gate_asks_for_is_fp405_naming_it(
    workflow: object, values: list[str], named: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_approvals(workflow, parse_approvals(values))  # type: ignore[arg-type]
    assert caught.value.code == "FP407"
    assert f"--approve {named}:" in str(caught.value)
    assert "release/ship: approved, comment" in (caught.value.hint or "")


@pytest.mark.parametrize(
    "values",
    [["approved=yes", "approved=no"], ["ship:comment=a", "ship:comment=a"], [" k =1", "k=2"]],
)
def test_a_repeated_key_is_fp405(values: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_approvals(values)
    assert caught.value.code == "FP407" and "twice" in str(caught.value)


def test_the_cli_refuses_before_the_run_starts(tmp_path: Path) -> None:
    root = write_workflow(tmp_path / "wf", FILES)
    for args, named in (
        (["--approve", "approved=yes", "--approve", "shp:approved=yes"], "shp:approved"),
        (["--approve", "approved=yes", "--approve", "approved=no"], "approved"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "prefect_folpipe", "run", str(root), "--json", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"},  # never reached
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr
        error = json.loads(proc.stdout)["error"]
        assert error["code"] == "FP407" and named in error["message"]
        assert not (root / ".folpipe" / "runs").exists()  # no run was recorded
