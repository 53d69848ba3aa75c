"""Issue 11 point 8: an edit that changes a task's result invalidates its checkpoint.

Files under ``input/`` and any data file the task folder holds are part of its content hash;
the scripted replies or cassette answering a task are part of its key through the provider's
identity. Edits elsewhere (a sibling, the task's own ``output/``, another task's replies) keep
the checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from builders import write_workflow

from prefect_folpipe.validate import load_workflow

pytestmark = pytest.mark.prefect


def statuses(result) -> dict[str, str]:
    return {row["path"]: row["status"] for row in result.tasks if row["path"]}


def content_hash(root: Path, path: str) -> str:
    return load_workflow(root).find(path).content_hash


def test_every_data_file_of_the_task_folder_is_hashed(tmp_path: Path) -> None:
    root = write_workflow(
        tmp_path / "wf",
        {
            "subtasks/a/instructions.md": "Summarise input/data.csv.",
            "subtasks/a/input/data.csv": "x\n1\n",
            "subtasks/a/input/deep/more.txt": "m",
            "subtasks/a/notes.txt": "n",
            "subtasks/a/data/table.json": "[]",
            "subtasks/b/instructions.md": "Other.",
        },
    )
    task = root / "subtasks" / "a"
    before = content_hash(root, "a")
    sibling = content_hash(root, "b")
    for rel in ("input/data.csv", "input/deep/more.txt", "notes.txt", "data/table.json"):
        (task / rel).write_text("changed")
        after = content_hash(root, "a")
        assert after != before, rel
        before = after
    (task / "output").mkdir()
    (task / "output" / "result.txt").write_text("written by the task")
    (task / "input" / "__pycache__").mkdir()
    (task / "input" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (task / ".notes.swp").write_text("editor state")
    assert content_hash(root, "a") == before
    assert content_hash(root, "b") == sibling


def test_editing_input_reruns_only_that_task(make_workflow, run):  # type: ignore[no-untyped-def]
    wf = make_workflow(
        {
            "subtasks/a/instructions.md": "Summarise input/data.csv.",
            "subtasks/a/input/data.csv": "x\n1\n",
            "subtasks/b/instructions.md": "Other.",
        }
    )
    assert set(statuses(run(wf)).values()) == {"completed"}
    (wf / "subtasks" / "a" / "input" / "data.csv").write_text("x\n2\n")
    assert statuses(run(wf)) == {"a": "completed", "b": "cached"}
    assert statuses(run(wf)) == {"a": "cached", "b": "cached"}


def test_editing_the_shipped_replies_reruns_the_tasks_they_answer(make_workflow, run) -> None:
    wf = make_workflow(
        {
            "subtasks/a/instructions.md": "A.",
            "subtasks/b/instructions.md": "B.",
            "replies.yaml": {"tasks": {"a": ["first"], "b": ["steady"]}},
        }
    )
    first = run(wf)
    assert first.context["a"] == "first"
    replies = wf / "replies.yaml"
    data = yaml.safe_load(replies.read_text())
    data["tasks"]["a"] = ["second"]
    replies.write_text(yaml.safe_dump(data))
    second = run(wf)
    assert statuses(second) == {"a": "completed", "b": "cached"}
    assert second.context["a"] == "second"


def test_editing_replies_given_with_replies_reruns(make_workflow, run, tmp_path: Path) -> None:
    wf = make_workflow({"subtasks/a/instructions.md": "A."})
    replies = tmp_path / "answers.yaml"
    replies.write_text("tasks: {a: [one]}\n")
    assert run(wf, provider="scripted", replies=replies).context["a"] == "one"
    replies.write_text("tasks: {a: [two]}\n")
    again = run(wf, provider="scripted", replies=replies)
    assert statuses(again) == {"a": "completed"}
    assert again.context["a"] == "two"


def test_a_changed_cassette_reruns(make_workflow, run, tmp_path: Path) -> None:
    wf = make_workflow(
        {"subtasks/a/instructions.md": "A.", "replies.yaml": {"tasks": {"a": ["recorded"]}}}
    )
    cassette = tmp_path / "cassette.yaml"
    from prefect_folpipe.compile.options import RunOptions

    run(wf, options=RunOptions(record=cassette))
    replayed = run(wf, provider="replay", replies=cassette)
    assert replayed.context["a"] == "recorded"
    data = yaml.safe_load(cassette.read_text())
    data["interactions"][0]["response"]["text"] = "re-recorded"
    cassette.write_text(yaml.safe_dump(data))
    again = run(wf, provider="replay", replies=cassette)
    assert statuses(again) == {"a": "completed"}
    assert again.context["a"] == "re-recorded"
