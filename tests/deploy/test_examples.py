"""The example prefect.yaml files in deployments/ reference steps, entrypoints and schedules
that exist and are valid."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_folpipe.validate.deploy_rules import schedule_problems
from prefect_folpipe.workflow.config import Schedule

DEPLOYMENTS = Path(__file__).parent.parent.parent / "deployments"
EXAMPLES = sorted(DEPLOYMENTS.glob("*/prefect.yaml"))
OPTIONAL_COLLECTIONS = ("prefect_docker.", "prefect_kubernetes.", "prefect_aws.")


def _import(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(import_module(module), name)


def test_there_is_an_example_per_pool_type() -> None:
    assert {p.parent.name for p in EXAMPLES} == {"process", "docker", "kubernetes", "dask"}
    assert (DEPLOYMENTS / "README.md").is_file()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.parent.name)
def test_example_is_consistent(example: Path) -> None:
    data = yaml.safe_load(example.read_text())
    steps = [*(data.get("build") or []), *(data.get("push") or []), *(data.get("pull") or [])]
    for step in steps:
        (name,) = step
        if not name.startswith(OPTIONAL_COLLECTIONS):
            assert callable(_import(name)), name
    for deployment in data["deployments"]:
        entrypoint = deployment["entrypoint"]
        if entrypoint.startswith("prefect_folpipe"):
            assert _import(entrypoint.replace(":", ".")).name == "folpipe-run"
        else:
            assert entrypoint == "flow.py:flow"
        for schedule in deployment.get("schedules") or []:
            assert schedule_problems(Schedule.model_validate(schedule)) == []
        assert "folpipe" in deployment["tags"]
