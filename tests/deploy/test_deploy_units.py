"""Prefect-free parts of deployment: options, parameters, dependencies, prefect.yaml, signature."""

from __future__ import annotations

import inspect
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_folpipe.compile.signature import merge_inputs, parameter_signature
from prefect_folpipe.deploy.dependencies import collect_dependencies, dedupe, install_command
from prefect_folpipe.deploy.options import (
    deployment_parameters,
    parse_params,
    resolve_schedule,
    workflow_folder,
)
from prefect_folpipe.deploy.project import (
    INSTALL_STEP,
    ProjectOptions,
    project_document,
    write_project,
)
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.workflow.config import Schedule, TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow


def _task(name: str, path: str, folder: Path, data: dict[str, Any], *children: Task) -> Task:
    config = TaskConfig.model_validate(data)
    return Task(name, path, folder, config, EffectiveSettings(), children=children)


def _workflow(
    root_dir: Path, root: dict[str, Any], child: dict[str, Any] | None = None
) -> Workflow:
    kids = (_task("child", "child", root_dir / "subtasks" / "child", child or {}),)
    return Workflow(_task("wf", "", root_dir, root, *kids), root_dir, "wf")


def _code(excinfo: pytest.ExceptionInfo[ConfigError]) -> str:
    return excinfo.value.code


def test_missing_folder_is_fp610(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as excinfo:
        workflow_folder(tmp_path / "nope")
    assert _code(excinfo) == "FP610"
    assert workflow_folder(tmp_path) == tmp_path.resolve()


def test_schedule_from_options_overrides_the_declared_one(tmp_path: Path) -> None:
    wf = _workflow(tmp_path, {"deploy": {"schedule": {"cron": "0 3 * * *"}}})
    assert resolve_schedule(wf) == Schedule(cron="0 3 * * *")
    assert resolve_schedule(wf, interval=30) == Schedule(interval=30)
    assert resolve_schedule(wf, use_declared=False) is None


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"cron": "0 3 * * *", "interval": 5}, "FP611"),
        ({"interval": -1}, "FP611"),
        ({"timezone": "UTC"}, "FP611"),
        ({"cron": "99 * * * *"}, "FP601"),
        ({"cron": "0 3 * * *", "timezone": "Atlantis/Capital"}, "FP603"),
    ],
)
def test_bad_schedule_options(tmp_path: Path, kwargs: dict[str, Any], code: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        resolve_schedule(_workflow(tmp_path, {}), **kwargs)
    assert _code(excinfo) == code


def test_params_parse_json_values() -> None:
    assert parse_params(["n=3", "flag=true", "topic=prefect flows", 'c={"a": 1}']) == {
        "n": 3,
        "flag": True,
        "topic": "prefect flows",
        "c": {"a": 1},
    }
    with pytest.raises(ConfigError) as excinfo:
        parse_params(["novalue"])
    assert _code(excinfo) == "FP612"


def test_deployment_parameters_per_workflow_and_generic(tmp_path: Path) -> None:
    wf = _workflow(
        tmp_path, {"input": {"required": ["topic"]}, "deploy": {"parameters": {"topic": "a"}}}
    )
    assert deployment_parameters(wf, {}, generic=False) == {"topic": "a"}
    assert deployment_parameters(wf, {"topic": "b"}, generic=False) == {"topic": "b"}
    generic = deployment_parameters(wf, {"fresh": True, "context": {"x": 1}}, generic=True)
    assert generic == {
        "path": str(tmp_path.resolve()),
        "fresh": True,
        "context": {"x": 1, "topic": "a"},
    }
    with pytest.raises(ConfigError) as excinfo:
        deployment_parameters(wf, {"colour": "red"}, generic=False)
    assert _code(excinfo) == "FP612"


def test_dependencies_are_collected_and_deduplicated(tmp_path: Path) -> None:
    wf = _workflow(
        tmp_path,
        {"dependencies": ["Requests>=2", "pyyaml"]},
        {"dependencies": ["requests >= 2", "PyYAML", "rich"]},
    )
    assert collect_dependencies(wf) == ["Requests>=2", "pyyaml", "rich"]
    assert dedupe(["a", " a ", "b", ""]) == ["a", "b"]


def test_install_command_prefers_uv_next_to_the_interpreter() -> None:
    command = install_command(["rich"])
    if (Path(sys.executable).parent / "uv").is_file():
        assert command == [
            str(Path(sys.executable).parent / "uv"), "pip", "install", "--python",
            sys.executable, "rich",
        ]  # fmt: skip
    elif shutil.which("uv"):
        assert command == [shutil.which("uv"), "pip", "install", "--python", sys.executable, "rich"]
    else:
        assert command == [
            sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "rich",
        ]  # fmt: skip


def test_project_document_carries_the_deploy_block(tmp_path: Path) -> None:
    wf = _workflow(
        tmp_path,
        {
            "description": "Nightly report",
            "input": {"required": ["topic"]},
            "dependencies": ["rich"],
            "deploy": {
                "name": "nightly",
                "work_pool": "local",
                "schedule": {"cron": "0 3 * * *", "timezone": "UTC"},
                "parameters": {"topic": "prefect"},
                "tags": ["reports"],
            },
        },
    )
    doc = project_document(wf, ProjectOptions())
    (entry,) = doc["deployments"]
    assert entry["entrypoint"] == "flow.py:flow"
    assert entry["name"] == "nightly"
    assert entry["work_pool"] == {"name": "local", "job_variables": {}}
    assert entry["schedules"] == [{"cron": "0 3 * * *", "timezone": "UTC"}]
    assert entry["parameters"] == {"topic": "prefect"}
    assert entry["tags"] == ["folpipe", "workflow:wf", "reports"]
    assert doc["pull"][1] == {INSTALL_STEP: {"path": "."}}
    docker = project_document(wf, ProjectOptions(pool="dock", pool_type="docker"))
    env = docker["deployments"][0]["work_pool"]["job_variables"]["env"]
    assert env == {"EXTRA_PIP_PACKAGES": "rich"}


def test_write_project_refuses_to_clobber(tmp_path: Path) -> None:
    wf = _workflow(tmp_path, {})
    written = write_project(wf, ProjectOptions(pool="p", schedule=Schedule(interval=10)))
    assert written.flow_file == tmp_path / "flow.py"
    data = yaml.safe_load((tmp_path / "prefect.yaml").read_text())
    assert data["deployments"][0]["schedules"] == [{"interval": 10.0}]
    assert (
        write_project(wf, ProjectOptions(pool="p", schedule=Schedule(interval=10))).flow_file
        is None
    )
    (tmp_path / "flow.py").write_text("# mine\n")
    with pytest.raises(ConfigError) as excinfo:
        write_project(wf, ProjectOptions())
    assert _code(excinfo) == "FP617"
    write_project(wf, ProjectOptions(), force=True)
    assert "folder_to_flow(Path(__file__).parent)" in (tmp_path / "flow.py").read_text()


def test_parameter_signature_lists_inputs_then_context() -> None:
    config = TaskConfig.model_validate(
        {"input": {"required": ["topic"], "optional": ["depth", "not-an-identifier"]}}
    )
    signature = parameter_signature(config)
    names = ["context", "topic", "depth", "fresh", "reuse_checkpoints", "rerun_from"]
    assert list(signature.parameters) == [*names, "restore_from"]
    kinds = [p.kind for p in signature.parameters.values()]
    assert kinds == [inspect.Parameter.POSITIONAL_OR_KEYWORD, *[inspect.Parameter.KEYWORD_ONLY] * 6]
    # a required input has no default (the form requires it); an optional one defaults to None
    assert signature.parameters["topic"].default is inspect.Parameter.empty
    assert signature.parameters["depth"].default is None
    assert merge_inputs({"topic": "old", "x": 1}, {"topic": "new", "depth": None}) == {
        "topic": "new",
        "x": 1,
    }


def test_a_customised_flow_file_is_kept(tmp_path: Path) -> None:
    from prefect_folpipe.deploy.project import ensure_flow_file

    assert ensure_flow_file(tmp_path) == tmp_path / "flow.py"
    (tmp_path / "flow.py").write_text("# my own flow.py\n")
    assert ensure_flow_file(tmp_path) is None
    assert (tmp_path / "flow.py").read_text() == "# my own flow.py\n"
