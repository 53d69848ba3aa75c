"""``folpipe convert task-to-skill|skill-to-task`` (point 13): a lossless round trip on every
example (ours and folpipe 0.1.8's), and SKILL.md files that 0.1.8's convert wrote."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from prefect_folpipe import validate_workflow
from prefect_folpipe.cli import cli
from prefect_folpipe.validate import load_workflow

REPO = Path(__file__).parent.parent.parent
OURS = sorted(p for p in (REPO / "examples").iterdir() if (p / "task.yaml").is_file())


def convert(*args: str) -> Any:
    result = CliRunner().invoke(cli, ["convert", *map(str, args)])
    return result


def snapshot_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".folpipe" not in p.parts
    }


def snapshot_tree(root: Path) -> list[tuple[Any, ...]]:
    """What the run reads: every task's identity, config (name/description aside), prompt,
    settings, provider and tools."""
    out = []
    for task in load_workflow(root).tasks():
        config = task.config.model_dump(exclude={"name", "description"})
        provider = task.provider.config.model_dump() if task.provider else None
        tools = sorted(t.name for t in task.tools)
        prompt = task.instructions
        out.append((task.path, task.name, config, prompt, task.settings, provider, tools))
    return out


def round_trip(root: Path) -> None:
    files = snapshot_files(root)
    tree = snapshot_tree(root)
    converted = convert("task-to-skill", root, "--recursive", "--apply")
    assert converted.exit_code == 0, converted.output
    left = [p for p in root.rglob("*") if p.name in ("task.yaml", "instructions.md")]
    assert [p for p in left if (p.parent / "SKILL.md").exists()] == []
    assert (root / "SKILL.md").is_file()
    errors = [d for d in validate_workflow(root) if d.severity.value == "error"]
    assert errors == []
    assert snapshot_tree(root) == tree, "the SKILL.md tree loads as the task.yaml tree did"
    back = convert("skill-to-task", root, "--recursive", "--apply")
    assert back.exit_code == 0, back.output
    assert snapshot_files(root) == files, "task -> skill -> task gives back the same bytes"


@pytest.mark.parametrize("example", OURS, ids=[p.name for p in OURS])
def test_round_trip_on_our_examples(example: Path, tmp_path: Path) -> None:
    root = tmp_path / example.name
    shutil.copytree(example, root, ignore=shutil.ignore_patterns(".folpipe", "__pycache__"))
    round_trip(root)


@pytest.mark.parametrize("name", ["hello_world", "cv_pipeline", "release_pipeline"])
def test_round_trip_on_the_seed_examples(name: str, seed_examples: Path) -> None:
    round_trip(seed_examples / name)


def test_dry_run_prints_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text("output: [greeting]\n")
    (tmp_path / "instructions.md").write_text("# Greeter\nGreet the user.\n")
    result = convert("task-to-skill", tmp_path)
    assert result.exit_code == 0
    assert f"--- DRY RUN: {tmp_path / 'SKILL.md'} ---" in result.output
    assert f"name: {tmp_path.name}  # added by folpipe convert" in result.output
    assert "description: Greeter  # added by folpipe convert" in result.output
    assert not (tmp_path / "SKILL.md").exists()


SKILL_WRITTEN_BY_018 = """\
---
input:
- artifact_path
- version
metadata:
  author: ''
  tags: []
  version: 1.0.0
name: deploy_production
output:
- production_url
timeout: 60
# agentflow:priority: 40
# agentflow:conditions:
# agentflow:  skip_if: not context.get('approved', False)
# agentflow:agent:
# agentflow:  temperature: 0.2
---

You are a production deployment agent.
"""


def test_skill_md_written_by_018_converts_to_a_valid_task(tmp_path: Path) -> None:
    folder = tmp_path / "subtasks" / "40_deploy_production"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_WRITTEN_BY_018)
    (tmp_path / "instructions.md").write_text("root")
    result = convert("skill-to-task", tmp_path, "--recursive", "--apply")
    assert result.exit_code == 0, result.output
    assert validate_workflow(tmp_path) == []  # 0.1.8's own convert left a broken task.yaml
    task = load_workflow(tmp_path).find("deploy_production")
    assert task.priority == 40
    assert task.config.conditions.skip_if == "not context.get('approved', False)"
    assert task.config.agent is not None and task.config.agent.temperature == 0.2
    assert task.config.input is not None and task.config.input.required == [
        "artifact_path",
        "version",
    ]
    assert task.settings.timeout == 60
    text = (folder / "task.yaml").read_text()
    assert text.startswith("# SKILL.md keys kept by folpipe convert:\n# metadata:\n")
    assert (folder / "instructions.md").read_text() == "\nYou are a production deployment agent.\n"
    again = convert("task-to-skill", folder, "--apply")
    assert again.exit_code == 0
    assert "metadata:\n  author: ''" in (folder / "SKILL.md").read_text()


def test_nothing_to_convert_is_a_coded_error(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("---\nname: x\n---\nbody\n")
    result = convert("task-to-skill", tmp_path)
    assert result.exit_code == 2
    assert "FP180" in result.output
    (tmp_path / "task.yaml").write_text("name: x\n")
    both = convert("task-to-skill", tmp_path)
    assert both.exit_code == 2 and "both SKILL.md and task.yaml" in both.output
