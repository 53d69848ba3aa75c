"""`folpipe run` installs the tasks' missing `dependencies:` first."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_folpipe.deploy import dependencies
from prefect_folpipe.validate import load_workflow


def test_missing_keeps_only_unsatisfied_requirements() -> None:
    assert dependencies.missing(
        [
            "pytest>=1",  # installed and new enough
            "PyYAML",  # installed, other spelling
            "pytest<1",  # installed but too new
            "no-such-package-folpipe-test",  # not installed
            "no-such-package-folpipe-test2; python_version < '3'",  # marker excludes it
        ]
    ) == ["pytest<1", "no-such-package-folpipe-test"]


def _workflow(tmp_path: Path, deps: list[str]) -> Path:
    (tmp_path / "task.yaml").write_text(f"dependencies: {deps!r}\n")
    (tmp_path / "instructions.md").write_text("Do it.\n")
    child = tmp_path / "subtasks" / "child"
    child.mkdir(parents=True)
    (child / "instructions.md").write_text("Child.\n")
    (child / "task.yaml").write_text(
        "dependencies: ['pytest>=1', 'no-such-package-folpipe-test']\n"
    )
    return tmp_path


def test_ensure_installed_installs_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(dependencies, "install", lambda packages: calls.append(list(packages)))
    workflow = load_workflow(_workflow(tmp_path, ["pyyaml>=5"]))

    assert dependencies.ensure_installed(workflow) == ["no-such-package-folpipe-test"]
    assert calls == [["no-such-package-folpipe-test"]]


def test_run_stops_with_a_coded_error_when_installing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    failing = [sys.executable, "-c", "import sys; print('no index'); sys.exit(3)"]
    monkeypatch.setattr(dependencies, "install_command", lambda packages, python=None: failing)
    result = CliRunner().invoke(cli, ["run", str(_workflow(tmp_path, [])), "--json"])
    assert result.exit_code == 2, result.output
    assert "FP620" in result.output
    assert "Traceback" not in result.output


def test_the_pull_step_installs_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_folpipe.deploy import steps

    calls: list[list[str]] = []
    monkeypatch.setattr(steps, "install", lambda packages: calls.append(list(packages)) or [])
    done = steps.install_dependencies(str(_workflow(tmp_path, ["pyyaml>=5"])), ["pytest"])
    assert calls == [["no-such-package-folpipe-test"]]
    assert done["packages"] == [
        "pyyaml>=5", "pytest>=1", "no-such-package-folpipe-test", "pytest"
    ]  # fmt: skip
