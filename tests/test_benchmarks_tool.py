"""``python -m benchmarks``: its scenario table parses, names functions that exist, and its
smallest scenario builds a folder that validates (``--dry-run``: no server, nothing run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import __main__ as cli
from benchmarks import table


@pytest.mark.parametrize("quick", [False, True])
def test_every_scenario_names_existing_builders(quick: bool) -> None:
    scenarios = table.load(quick=quick)
    assert {"parallel_leaves", "chain", "branches", "chain_rerun", "tree", "group"} <= set(
        scenarios
    )
    table.check_names(scenarios)  # raises TableError on a missing function (imports nothing)
    for scenario in scenarios.values():
        assert set(scenario.compare) <= set(table.KINDS[scenario.kind]), scenario.name
        assert "{" not in scenario.title, scenario.title


def test_quick_shapes_are_smaller() -> None:
    full, quick = table.load(), table.load(quick=True)
    assert quick["chain"].size["count"] < full["chain"].size["count"]
    assert quick["tree"].repetitions == 1
    assert "tree_rerun" in full and "tree_rerun" not in quick


def test_a_bad_table_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "scenarios.yaml"
    bad.write_text(
        "shapes:\n  one: {folder: workflows.one_task}\n"
        "scenarios:\n  x: {title: t, kind: run, shape: one, compare: [bare]}\n"
    )
    with pytest.raises(table.TableError, match="no bare flow"):
        table.load(path=bad)
    bad.write_text(
        "shapes:\n  one: {folder: os.system}\nscenarios:\n  x: {title: t, kind: cli, "
        "command: validate, shape: one}\n"
    )
    with pytest.raises(table.TableError, match="not defined"):
        table.check_names(table.load(path=bad))
    with pytest.raises(table.TableError, match=r"module\.function"):
        table.resolve("os.system")
    assert callable(table.resolve("workflows.one_task"))


def test_smallest_scenario_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--quick", "--dry-run", "--only", "run_fresh"]) == 0
    assert "run_fresh" in capsys.readouterr().out
    assert cli.main(["--only", "nonesuch", "--list"]) == 2


def test_rerun_scenarios_with_history(tmp_path: Path) -> None:
    full, quick = table.load(), table.load(quick=True)
    assert full["group_rerun_history"].history == full["tree_rerun_history"].history == 10
    assert 0 < quick["group_rerun_history"].history < 10
    assert "tree_rerun_history" not in quick
    bad = tmp_path / "scenarios.yaml"
    bad.write_text(
        "shapes:\n  one: {folder: workflows.one_task}\n"
        "scenarios:\n  x: {title: t, kind: load, shape: one, history: 2}\n"
    )
    with pytest.raises(table.TableError, match="only a rerun scenario"):
        table.load(path=bad)
