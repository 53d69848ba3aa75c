"""``folpipe init``: templates that validate, run offline, and never overwrite a folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from prefect_folpipe.cli import cli
from prefect_folpipe.cli.init import SCHEMA_FILE, WORKFLOW_TEMPLATES, scaffold, template_files
from prefect_folpipe.expressions import compile_condition
from prefect_folpipe.workflow import TaskConfig

MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.MULTILINE)


def _init(*args: str) -> object:
    return CliRunner().invoke(cli, ["init", *args])


def _task_name(folder: Path) -> str:
    return re.sub(r"^\d+_", "", folder.name)


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_init_writes_every_template_file_with_placeholders_filled(
    tmp_path: Path, template: str
) -> None:
    target = tmp_path / "my_flow"
    result = _init(str(target), "--template", template)
    assert result.exit_code == 0, result.output
    assert f"created a {template} workflow" in result.output
    for rel in template_files(template):
        text = (target / rel).read_text(encoding="utf-8")
        assert "__NAME__" not in text and "__SCHEMA__" not in text, rel
    assert (target / SCHEMA_FILE).is_file()
    assert (target / ".gitignore").read_text(encoding="utf-8") == ".folpipe/\n"
    root = yaml.safe_load((target / "task.yaml").read_text(encoding="utf-8"))
    assert root["name"] == "my_flow"


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_every_task_yaml_points_its_editor_at_the_schema(tmp_path: Path, template: str) -> None:
    scaffold(tmp_path / "wf", template)
    for file in (tmp_path / "wf").rglob("task.yaml"):
        match = MODELINE.search(file.read_text(encoding="utf-8"))
        assert match, file
        assert (file.parent / match.group(1)).resolve() == (tmp_path / "wf" / SCHEMA_FILE)


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_templates_are_offline_and_parse_as_task_configs(tmp_path: Path, template: str) -> None:
    target = tmp_path / "wf"
    scaffold(target, template)
    root = TaskConfig.model_validate(yaml.safe_load((target / "task.yaml").read_text()))
    assert root.providers is not None
    assert root.providers["default"] == "scripted"
    scripted = root.providers["scripted"]
    assert not isinstance(scripted, str)
    assert scripted.replies == "replies.yaml"
    assert (target / "replies.yaml").is_file()
    text = (target / "task.yaml").read_text(encoding="utf-8")
    assert "#   api_key_env: ANTHROPIC_API_KEY" in text
    if root.subtasks and root.subtasks.until:
        compile_condition(root.subtasks.until)


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_replies_answer_every_declared_output(tmp_path: Path, template: str) -> None:
    target = tmp_path / "wf"
    scaffold(target, template)
    replies = yaml.safe_load((target / "replies.yaml").read_text(encoding="utf-8"))
    scripted = replies.get("tasks", {})
    python_types = {"str": str, "int": int, "float": float, "bool": bool, "list": list}
    python_types["dict"] = dict
    for file in target.rglob("task.yaml"):
        config = TaskConfig.model_validate(yaml.safe_load(file.read_text(encoding="utf-8")))
        if not config.output_keys:
            continue
        name = _task_name(file.parent)
        assert name in scripted, f"replies.yaml has no answers for {name}"
        assert "output" in scripted[name][-1], f"{name}: the last reply must be the answer"
        for entry in scripted[name]:
            if "output" not in entry:
                continue
            output = entry["output"]
            assert set(output) == set(config.output_keys), name
            for key, type_name in config.output_types.items():
                if type_name:
                    assert isinstance(output[key], python_types[type_name]), (name, key)


def test_loop_template_is_a_bounded_review_loop(tmp_path: Path) -> None:
    scaffold(tmp_path / "wf", "loop")
    config = TaskConfig.model_validate(yaml.safe_load((tmp_path / "wf" / "task.yaml").read_text()))
    assert config.subtasks is not None
    assert config.subtasks.execution_type == "loop"
    assert config.subtasks.max_iterations == 3
    condition = compile_condition(config.subtasks.until)
    assert condition.evaluate({"review_draft": {"approved": True}})
    assert not condition.evaluate({"review_draft": {"approved": False}})


def test_init_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    result = _init(str(tmp_path), "--template", "pipeline")
    assert result.exit_code == 2
    assert "is not empty" in result.output and "notes.txt" in result.output
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_init_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "a_file"
    target.write_text("x", encoding="utf-8")
    result = _init(str(target))
    assert result.exit_code == 2
    assert "is not a folder" in result.output


def test_init_accepts_an_existing_empty_folder(tmp_path: Path) -> None:
    result = _init(str(tmp_path))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "instructions.md").is_file()


def test_init_dot_names_the_workflow_after_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "20_daily_report"
    target.mkdir()
    monkeypatch.chdir(target)
    result = _init(".", "--template", "loop")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(Path("task.yaml").read_text(encoding="utf-8"))["name"] == "daily_report"


def test_init_inside_subtasks_adds_a_task_to_the_workflow(tmp_path: Path) -> None:
    scaffold(tmp_path / "wf", "pipeline")
    target = tmp_path / "wf" / "subtasks" / "40_publish"
    result = _init(str(target))
    assert result.exit_code == 0, result.output
    assert "created a new task" in result.output
    text = (target / "task.yaml").read_text(encoding="utf-8")
    assert MODELINE.search(text).group(1) == "../../task.schema.json"
    assert "providers" not in text
    assert (target / "instructions.md").is_file()
    TaskConfig.model_validate(yaml.safe_load(text) or {})


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_every_template_validates_with_zero_diagnostics(tmp_path: Path, template: str) -> None:
    from prefect_folpipe.validate import validate_workflow

    scaffold(tmp_path / "wf", template)
    assert [str(d) for d in validate_workflow(tmp_path / "wf")] == []


def test_a_task_added_by_init_keeps_the_workflow_valid(tmp_path: Path) -> None:
    from prefect_folpipe.validate import validate_workflow

    scaffold(tmp_path / "wf", "loop")
    scaffold(tmp_path / "wf" / "subtasks" / "30_polish", "task")
    assert [str(d) for d in validate_workflow(tmp_path / "wf")] == []


@pytest.mark.prefect
@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_every_template_runs_offline_as_a_prefect_flow(
    tmp_path: Path, template: str, prefect_harness: str
) -> None:
    from prefect_folpipe import run_workflow

    scaffold(tmp_path / "wf", template)
    result = run_workflow(tmp_path / "wf")
    assert result.status == "completed", result.tasks
    tasks = {task["path"]: task for task in result.tasks}
    assert all(task["status"] == "completed" for task in tasks.values())
    if template == "pipeline":
        assert result.context["approved"] is True
        write = tasks["write"]
        assert (write["attempts"], write["model_calls"], write["tool_calls"]) == (1, 2, 1)
        assert result.context["facts"] and result.context["sources"]
    if template == "loop":
        assert tasks[""]["iterations"] == 2
        assert result.context["review_draft"]["approved"] is True
