"""``folpipe schema``: the task.yaml JSON Schema, usable by editors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from prefect_folpipe.cli import cli
from prefect_folpipe.cli.init import WORKFLOW_TEMPLATES, scaffold
from prefect_folpipe.workflow import task_yaml_json_schema

jsonschema = pytest.importorskip("jsonschema")


def test_schema_prints_the_task_yaml_json_schema() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    assert schema == task_yaml_json_schema()
    assert schema["additionalProperties"] is False
    assert {"providers", "subtasks", "depends_on", "inherit_tools"} <= set(schema["properties"])


def test_schema_output_option_writes_a_file(tmp_path: Path) -> None:
    target = tmp_path / "editor" / "task.schema.json"
    result = CliRunner().invoke(cli, ["schema", "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text(encoding="utf-8")) == task_yaml_json_schema()


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_every_template_task_yaml_matches_the_schema(tmp_path: Path, template: str) -> None:
    validator = jsonschema.Draft202012Validator(task_yaml_json_schema())
    scaffold(tmp_path / "wf", template)
    files = sorted((tmp_path / "wf").rglob("task.yaml"))
    assert files
    for file in files:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        errors = [error.message for error in validator.iter_errors(data)]
        assert errors == [], f"{file}: {errors}"


def test_schema_rejects_a_misspelled_key_like_an_editor_would() -> None:
    validator = jsonschema.Draft202012Validator(task_yaml_json_schema())
    assert not validator.is_valid({"subtasks": {"execution_typ": "loop"}})
    assert not validator.is_valid({"priorty": 10})
    assert validator.is_valid({"subtasks": {"execution_type": "loop", "max_iterations": 3}})
