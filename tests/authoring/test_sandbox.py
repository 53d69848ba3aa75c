"""ctx.resolve_path: allowed roots, symlink grants, and every way out denied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prefect_folpipe.authoring._context import ToolContext
from prefect_folpipe.authoring._grants import allowed_roots, resolve_path
from prefect_folpipe.errors import SandboxViolation


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A workflow root with a .env, a task folder, a vault outside it, and a fake ~/.ssh."""
    root = tmp_path / "workflow"
    task = root / "subtasks" / "10_fetch"
    for folder in ("input", "output", "subtasks/child"):
        (task / folder).mkdir(parents=True)
    (root / ".env").write_text("ROOT_SECRET=1")
    (task / ".env").write_text("TASK_SECRET=1")
    (task / "task.yaml").write_text("name: fetch\n")
    (task / "tools.md").write_text("## t\n")
    (task / "instructions.md").write_text("Do it.")
    (task / "input" / "data.csv").write_text("a,b\n")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "api_key.txt").write_text("granted")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE")
    os.symlink(vault, task / "credentials")  # a directory symlink = an explicit grant
    return {"root": root, "task": task, "vault": vault, "home": home}


def test_allowed_paths_resolve_to_real_paths(layout: dict[str, Path]) -> None:
    task = layout["task"]
    assert resolve_path(task, "input/data.csv") == (task / "input" / "data.csv").resolve()
    assert (
        resolve_path(task, "output/new_file.json") == (task / "output" / "new_file.json").resolve()
    )
    assert resolve_path(task, "output") == (task / "output").resolve()
    child_output = (task / "subtasks/child/output").resolve()
    assert resolve_path(task, "subtasks/child/output/x.txt").parent == child_output
    assert resolve_path(task, "instructions.md").read_text() == "Do it."
    assert resolve_path(task, "input/../output/x") == (task / "output" / "x").resolve()
    assert resolve_path(task, str((task / "input" / "data.csv").absolute())).name == "data.csv"


def test_symlink_grant_reaches_its_target(layout: dict[str, Path]) -> None:
    resolved = resolve_path(layout["task"], "credentials/api_key.txt")
    assert resolved == (layout["vault"] / "api_key.txt").resolve()
    assert resolved.read_text() == "granted"


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "./.env",
        "task.yaml",
        "tools.md",
        ".",
        "",
        "input/../.env",
        "input/../../../.env",
        "../../.env",
        "output/../../../../home/.ssh/id_rsa",
        "~/.ssh/id_rsa",
        "input/\x00/x",
        "credentials/../../workflow/.env",
    ],
)
def test_escapes_are_denied(layout: dict[str, Path], path: str) -> None:
    with pytest.raises(SandboxViolation):
        resolve_path(layout["task"], path)


def test_absolute_paths_outside_are_denied(layout: dict[str, Path]) -> None:
    task = layout["task"]
    for target in (
        layout["root"] / ".env",
        layout["home"] / ".ssh" / "id_rsa",
        Path.home() / ".ssh" / "id_rsa",
        Path("/etc/passwd"),
        task / ".env",
    ):
        with pytest.raises(SandboxViolation):
            resolve_path(task, str(target))


def test_symlinked_file_inside_input_pointing_out_is_denied(layout: dict[str, Path]) -> None:
    task = layout["task"]
    os.symlink(layout["root"] / ".env", task / "input" / "innocent.txt")
    os.symlink(layout["home"] / ".ssh", task / "input" / "ssh_dir")
    with pytest.raises(SandboxViolation):
        resolve_path(task, "input/innocent.txt")
    with pytest.raises(SandboxViolation):
        resolve_path(task, "input/ssh_dir/id_rsa")


def test_symlink_chain_out_of_a_grant_is_denied(layout: dict[str, Path]) -> None:
    vault = layout["vault"]
    os.symlink(layout["home"], vault / "escape")  # a link inside the granted dir
    os.symlink(vault / "escape", vault / "escape2")  # and a chain through it
    task = layout["task"]
    for path in ("credentials/escape/.ssh/id_rsa", "credentials/escape2/.ssh/id_rsa"):
        with pytest.raises(SandboxViolation):
            resolve_path(task, path)


def test_symlink_into_another_allowed_root_is_fine(layout: dict[str, Path]) -> None:
    task = layout["task"]
    os.symlink(task / "input" / "data.csv", task / "output" / "alias.csv")
    assert resolve_path(task, "output/alias.csv") == (task / "input" / "data.csv").resolve()


def test_only_directory_symlinks_directly_in_the_task_are_grants(layout: dict[str, Path]) -> None:
    task = layout["task"]
    os.symlink(layout["root"] / ".env", task / "env_link")  # a file symlink: no grant
    os.symlink(layout["home"], task / "subtasks" / "child" / "home_link")  # nested: no grant
    roots = allowed_roots(task)
    assert (layout["home"]).resolve() not in roots.directories
    with pytest.raises(SandboxViolation):
        resolve_path(task, "env_link")
    with pytest.raises(SandboxViolation):
        resolve_path(task, "subtasks/child/home_link/.ssh/id_rsa")


def test_pipeline_root_env_not_reachable_even_through_task_symlinks(
    layout: dict[str, Path],
) -> None:
    task = layout["task"]
    with pytest.raises(SandboxViolation):
        resolve_path(task, "credentials/../workflow/.env")


def test_task_folder_itself_behind_a_symlink(layout: dict[str, Path], tmp_path: Path) -> None:
    link = tmp_path / "task_link"
    os.symlink(layout["task"], link)
    assert resolve_path(link, "input/data.csv").read_text() == "a,b\n"
    with pytest.raises(SandboxViolation):
        resolve_path(link, ".env")


def test_tool_context_resolve_path(layout: dict[str, Path]) -> None:
    ctx = ToolContext(task_dir=layout["task"], context={"a": {"b": 1}, "x.y": 2})
    assert ctx.resolve_path("input/data.csv").name == "data.csv"
    with pytest.raises(SandboxViolation):
        ctx.resolve_path("../../.env")
    assert ctx.get("a.b") == 1 and ctx.get("x.y") == 2 and ctx.get("a.c", "d") == "d"
    assert ctx.get("missing") is None and ctx.get("a.b.c") is None
