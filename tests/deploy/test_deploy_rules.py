"""The root ``deploy:`` block and scale-out settings are checked without importing Prefect."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prefect_folpipe.errors import Severity
from prefect_folpipe.validate.deploy_rules import (
    config_diagnostics,
    cron_problem,
    rrule_problem,
    schedule_problems,
    timezone_problem,
)
from prefect_folpipe.workflow.config import Schedule, TaskConfig

FIXTURE = Path(__file__).parent.parent / "fixtures" / "deploy" / "report"

CRON_CORPUS = [
    "0 3 * * *", "*/5 * * * *", "0-59/15 * * * *", "0 0 * JAN-MAR *", "0 0 * * mon",
    "0 0 * * sun-sat", "0 0 5-1 * *", "0 0 * * 5-1", "0 0 L * *", "0 0 * * 5#2", "0 0 ? * *",
    "0 0 * * 7", "5/15 * * * *", "* * * * */2", "0 0 1,15 * *", "0 0 * * * *", "0 0 * * * * *",
    "@hourly", "@midnight", "@annually", "@reboot", "0 0 * * 8", "*/0 * * * *", "0 0 0 * *",
    "0 0 32 * *", "0 0 * 13 *", "0 24 * * *", "0 0 L-2 * *", "0 0 15W * *", "1-/2 * * * *",
    "a * * * *", "", "0 0 1 1 1/0", "0 0 * * MON#6", "0 0 * * 5L", "* * * *", "61 * * * *",
    "0 0 1 * * 61", "0 0 1 * * 5 2200", "0 0 * jan-dec/2 *", "0 0 * * 1-5/2", "0 0 1-31/40 * *",
]  # fmt: skip


@pytest.mark.parametrize("expression", CRON_CORPUS)
def test_cron_check_agrees_with_prefects_parser(expression: str) -> None:
    from prefect._vendor.croniter import croniter

    assert (cron_problem(expression) is None) == croniter.is_valid(expression)


def test_cron_problem_names_the_field() -> None:
    assert "hour" in (cron_problem("0 24 * * *") or "")
    assert "5 fields" in (cron_problem("* * * *") or "")


def test_timezone_and_rrule_checks() -> None:
    assert timezone_problem("Europe/Paris") is None
    assert "unknown timezone" in (timezone_problem("Mars/Olympus") or "")
    assert rrule_problem("FREQ=DAILY;BYHOUR=3") is None
    assert rrule_problem("FREQ=SOMETIMES") is not None


@pytest.mark.parametrize(
    ("schedule", "codes"),
    [
        (Schedule(cron="0 3 * * *", timezone="UTC"), []),
        (Schedule(interval=60), []),
        (Schedule(rrule="FREQ=HOURLY"), []),
        (Schedule(), ["FP600"]),
        (Schedule(cron="0 3 * * *", interval=60), ["FP600"]),
        (Schedule(cron="0 25 * * *"), ["FP601"]),
        (Schedule(rrule="FREQ=NEVER"), ["FP602"]),
        (Schedule(interval=5, timezone="Nowhere/Town"), ["FP603"]),
    ],
)
def test_schedule_problems(schedule: Schedule, codes: list[str]) -> None:
    assert [p.code for p in schedule_problems(schedule)] == codes


def _config(data: dict) -> TaskConfig:
    return TaskConfig.model_validate(data)


def test_parameters_must_name_declared_inputs() -> None:
    config = _config(
        {
            "input": {"required": ["topic"], "optional": ["depth"]},
            "deploy": {"parameters": {"topic": "x", "context": {}, "colour": "red"}},
        }
    )
    found = config_diagnostics(config, is_root=True, file="task.yaml", task="")
    assert [d.code for d in found] == ["FP604"]
    assert "'colour'" in found[0].message and "depth, topic" in found[0].message
    assert found[0].file == "task.yaml" and found[0].hint


def test_deploy_block_below_the_root_is_a_warning() -> None:
    config = _config({"deploy": {"schedule": {"cron": "bad"}}})
    found = config_diagnostics(config, is_root=False, task="child")
    assert [(d.code, d.severity) for d in found] == [("FP605", Severity.WARNING)]


def test_valid_deploy_block_has_no_diagnostics() -> None:
    config = _config(
        {
            "input": {"required": ["topic"]},
            "deploy": {
                "schedule": {"cron": "0 3 * * 1-5", "timezone": "Europe/Berlin"},
                "work_pool": "local",
                "parameters": {"topic": "prefect"},
                "tags": ["nightly"],
            },
        }
    )
    assert config_diagnostics(config, is_root=True) == []


def test_dask_address_needs_a_scheme() -> None:
    config = _config({"settings": {"task_runner": "dask", "dask_address": "localhost"}})
    assert [d.code for d in config_diagnostics(config, is_root=True)] == ["FP608"]
    good = _config({"settings": {"task_runner": "dask", "dask_address": "tcp://10.0.0.5:8786"}})
    assert config_diagnostics(good, is_root=True) == []


def test_folpipe_validate_reports_deploy_problems_with_lines(tmp_path: Path) -> None:
    from prefect_folpipe.validate import validate_workflow

    workflow = tmp_path / "report"
    shutil.copytree(FIXTURE, workflow)
    task_yaml = workflow / "task.yaml"
    text = task_yaml.read_text().replace(
        "audience: engineers", "audience: engineers\n    colour: red"
    )
    text = text.replace("- pyyaml>=6", "- 'pyyaml>=>6'")
    text += "  schedule:\n    cron: '0 25 * * *'\n    timezone: Mars/Base\n"
    task_yaml.write_text(text)
    lines = text.splitlines()
    found = {d.code: d for d in validate_workflow(workflow)}
    assert set(found) == {"FP601", "FP603", "FP604", "FP609"}
    assert lines[found["FP601"].line - 1].strip().startswith("cron:")
    assert lines[found["FP603"].line - 1].strip().startswith("timezone:")
    assert lines[found["FP604"].line - 1].strip().startswith("colour:")
    assert "pyyaml>=>6" in lines[found["FP609"].line - 1]
    assert all(d.file and d.file.endswith("task.yaml") and d.task == "" for d in found.values())
