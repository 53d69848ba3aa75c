"""The shared CLI rendering: diagnostics tables and JSON, and errors turned into exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from prefect_folpipe.cli._render import (
    diagnostics_payload,
    display_file,
    error_payload,
    exit_code_for,
    handle_errors,
    summary_text,
)
from prefect_folpipe.errors import (
    ConfigError,
    Diagnostic,
    FolpipeError,
    ProviderError,
    Severity,
    TaskError,
    WorkflowFailed,
    WorkflowValidationError,
)

ROOT = Path("/wf")
TYPO = Diagnostic(
    code="FP103",
    message="unknown key 'priorty' [did you mean 'priority'?]",
    file="/wf/subtasks/10_a/task.yaml",
    line=3,
    task="a",
    hint="fix the [spelling]",
)
WARN = Diagnostic(
    code="FP150",
    message="exclude_tools names an unknown tool 'nope'",
    file="/wf/task.yaml",
    line=7,
    task="",
    severity=Severity.WARNING,
)


def _command(exc: Exception, **options: object) -> click.Command:
    @click.command()
    def raising() -> None:
        with handle_errors(**options):  # type: ignore[arg-type]
            raise exc

    return raising


def test_payload_splits_errors_and_warnings_in_the_contract_shape() -> None:
    payload = diagnostics_payload([TYPO, WARN])
    assert payload["ok"] is False
    assert payload["errors"] == [
        {
            "code": "FP103",
            "message": TYPO.message,
            "file": TYPO.file,
            "line": 3,
            "task": "a",
            "hint": "fix the [spelling]",
        }
    ]
    assert [w["code"] for w in payload["warnings"]] == ["FP150"]
    assert diagnostics_payload([WARN])["ok"] is True


def test_files_are_shown_relative_to_the_workflow() -> None:
    assert display_file("/wf/subtasks/10_a/task.yaml", ROOT) == "subtasks/10_a/task.yaml"
    assert display_file("/elsewhere/x.md", ROOT) == "/elsewhere/x.md"
    assert display_file(None, ROOT) == ""


def test_summary_counts() -> None:
    assert summary_text([TYPO, WARN], "wf").plain == "✗ wf: 1 error, 1 warning"
    assert summary_text([WARN, WARN], "wf").plain == "✓ wf is valid (2 warnings)"
    assert summary_text([], "wf").plain == "✓ wf is valid"


def test_validation_error_prints_a_table_not_a_traceback() -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        _command(WorkflowValidationError([TYPO, WARN]), root=ROOT)
    )
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "subtasks/10_a/task.yaml:3" in result.stderr
    assert "unknown key 'priorty' [did you mean 'priority'?]" in result.stderr
    assert "hint: fix the [spelling]" in result.stderr
    assert "FP150" in result.stderr
    assert "1 error, 1 warning" in result.stderr
    assert result.stdout == ""


def test_validation_exit_code_can_be_1_for_inspection_commands() -> None:
    result = CliRunner().invoke(_command(WorkflowValidationError([TYPO]), validation_exit_code=1))
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ConfigError("No LLM provider configured.", hint="add providers"), 2),
        (WorkflowFailed("run failed"), 1),
        (TaskError("boom"), 1),
        (ProviderError("429", kind="rate_limit"), 1),
    ],
)
def test_exit_codes(exc: FolpipeError, code: int) -> None:
    assert exit_code_for(exc) == code
    result = CliRunner().invoke(_command(exc))
    assert result.exit_code == code
    assert f"error {exc.code}: {exc}" in result.stderr


def test_config_error_shows_its_code_and_hint() -> None:
    exc = ConfigError("No LLM provider configured.", code="FP401", hint="Add a providers block")
    result = CliRunner().invoke(_command(exc))
    assert "error FP401: No LLM provider configured." in result.stderr
    assert "hint: Add a providers block" in result.stderr


def test_json_errors_are_one_document_on_stdout() -> None:
    result = CliRunner().invoke(_command(WorkflowValidationError([TYPO, WARN]), json_output=True))
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert payload["ok"] is False
    assert payload["error"]["code"] == "FP100"
    assert [e["code"] for e in payload["errors"]] == ["FP103"]
    assert [w["code"] for w in payload["warnings"]] == ["FP150"]
    other = error_payload(ConfigError("nope", code="FP401", hint="h"))
    assert other["error"] == {
        "code": "FP401",
        "type": "ConfigError",
        "message": "nope",
        "hint": "h",
    }
    assert other["errors"] == [] and other["ok"] is False


def test_other_exceptions_are_not_swallowed() -> None:
    result = CliRunner().invoke(_command(RuntimeError("bug")))
    assert isinstance(result.exception, RuntimeError)


def test_handle_errors_also_works_as_a_decorator() -> None:
    @click.command()
    @handle_errors(validation_exit_code=1)
    def decorated() -> None:
        raise WorkflowValidationError([TYPO])

    result = CliRunner().invoke(decorated)
    assert result.exit_code == 1
    assert "FP103" in result.stderr
