"""``folpipe validate`` end to end over real fixture folders (tests/fixtures/cli/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefect_folpipe.cli import cli

from .cli_helpers import CLI_FIXTURES

BROKEN = CLI_FIXTURES / "broken"
VALID = CLI_FIXTURES / "valid"
WARNINGS = CLI_FIXTURES / "warnings"


def _validate(*args: str) -> object:
    return CliRunner(env={"COLUMNS": "220"}).invoke(cli, ["validate", *args])


def test_valid_workflow_exits_0_with_a_check_mark() -> None:
    result = _validate(str(VALID))
    assert result.exit_code == 0, result.output
    assert f"✓ {VALID} is valid" in result.stdout


def test_valid_workflow_json() -> None:
    result = _validate(str(VALID), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"ok": True, "errors": [], "warnings": []}


def test_broken_workflow_lists_every_error_with_file_and_line() -> None:
    result = _validate(str(BROKEN), "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["ok"] is False
    assert set(payload) == {"ok", "errors", "warnings"}
    for entry in payload["errors"]:
        assert set(entry) == {"code", "message", "file", "line", "task", "hint"}
        assert entry["code"].startswith("FP")
    typo = next(e for e in payload["errors"] if e["code"] == "FP103")
    assert (typo["file"], typo["line"], typo["task"]) == ("subtasks/10_fetch/task.yaml", 2, "fetch")
    assert "priority" in typo["hint"]
    files = {entry["file"] for entry in payload["errors"]}
    assert {
        "subtasks/10_fetch/task.yaml",
        "subtasks/20_merge/task.yaml",
        "subtasks/30_loop/task.yaml",
        "subtasks/40_skip/task.yaml",
    } <= files


def test_broken_workflow_human_table() -> None:
    result = _validate(str(BROKEN))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "FP103" in result.stdout
    assert "subtasks/10_fetch/task.yaml:2" in result.stdout
    assert "unknown key 'priorty'" in result.stdout
    assert "hint: did you mean 'priority'?" in result.stdout
    assert f"✗ {BROKEN}: " in result.stdout


def test_warnings_pass_unless_strict() -> None:
    result = _validate(str(WARNINGS), "--json")
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["ok"] is True and payload["errors"] == []
    assert [w["code"] for w in payload["warnings"]] == ["FP222"]
    human = _validate(str(WARNINGS))
    assert human.exit_code == 0
    assert "Warnings" in human.stdout and "no_such_tool" in human.stdout
    strict = _validate(str(WARNINGS), "--strict", "--json")
    assert strict.exit_code == 1
    assert json.loads(strict.stdout)["ok"] is False


def test_a_folder_without_task_marker_is_an_error() -> None:
    result = _validate(str(CLI_FIXTURES / "not_a_task"), "--json")
    assert result.exit_code == 1
    assert [e["code"] for e in json.loads(result.stdout)["errors"]] == ["FP101"]


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = _validate(str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_garbage_yaml_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text("name: [unclosed\n  - : :\n", encoding="utf-8")
    result = _validate(str(tmp_path), "--json")
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["errors"]
    assert errors and errors[0]["file"] == "task.yaml"


def test_python_dash_m_runs_validate_in_a_real_process() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", "validate", str(BROKEN), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert json.loads(out.stdout)["ok"] is False


@pytest.mark.slow
def test_validate_never_imports_prefect() -> None:
    code = (
        "import sys\n"
        "from prefect_folpipe.cli import main\n"
        "try:\n"
        f"    main(['validate', {str(VALID)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print('PREFECT-LOADED' if 'prefect' in sys.modules else 'PREFECT-FREE')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "PREFECT-FREE"
