"""Concurrent runs of one folder pay once per task (issue 31 point 9): two ``folpipe run``
processes started together on a 6-task sequential chain make 6 model calls between them; the
second waits at each task the first is making (a lock beside the checkpoint) and reuses it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]

NAMES = ["one", "two", "three", "four", "five", "six"]


def _chain(root: Path) -> Path:
    files: dict[str, Any] = {
        "task.yaml": {"name": "chain", "subtasks": {"execution_type": "sequential"}},
        # each answer takes 0.3 s, longer than the two processes' start skew: the runs
        # overlap, and the later one waits at the task the earlier one is making
        "replies.yaml": {
            "tasks": {name: [{"text": f"{name} done", "delay": 0.3}] for name in NAMES}
        },
    }
    for number, name in enumerate(NAMES, 1):
        files[f"subtasks/{number}0_{name}/instructions.md"] = f"Do step {name}."
    return write_workflow(root, files)


def test_two_concurrent_runs_of_a_chain_pay_once_per_task(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = _chain(tmp_path / "wf")
    command = [sys.executable, "-m", "prefect_folpipe", "run", str(root), "--json"]
    runs = [
        subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    documents = []
    for process in runs:
        out, err = process.communicate(timeout=400)
        assert process.returncode == 0, err.decode()[-3000:]
        documents.append(json.loads(out))
    calls = [row["model_calls"] for doc in documents for row in doc["tasks"] if row["path"]]
    assert sum(calls) == 6, [
        {row["path"]: (row["status"], row["model_calls"]) for row in doc["tasks"]}
        for doc in documents
    ]
    for document in documents:
        assert document["status"] == "completed"
        assert document["context"]["six"] == "six done"
    statuses = [
        {row["path"]: row["status"] for row in doc["tasks"] if row["path"]} for doc in documents
    ]
    for name in NAMES:  # each task made by one run, reused by the other
        assert sorted(status[name] for status in statuses) == ["cached", "completed"]
    assert not list((root / ".folpipe" / "results" / "locks").iterdir())


RUN_THROUGH_BLOCK = """
import sys
sys.path.insert(0, {tests!r})
from blockstore import FarFolder
from prefect.filesystems import LocalFileSystem
from prefect_folpipe.compile.api import run_workflow
from prefect_folpipe.compile.options import RunOptions
kind, name, path = sys.argv[1:4]
block = (FarFolder if kind == "far" else LocalFileSystem).load(name)
print(run_workflow(path, options=RunOptions(result_storage=block)).to_json())
"""


@pytest.mark.parametrize("kind", ["local", "far"])
def test_two_concurrent_runs_through_a_storage_block_pay_once_per_task(
    tmp_path: Path, cli_env: dict[str, str], kind: str
) -> None:
    """The result storage is a saved block: a ``LocalFileSystem`` (its folder gets lock
    files) or a block folpipe reaches only through ``read_path`` / ``write_path``, as it does
    S3 (``tests/blockstore.py``: it gets leases written through the block)."""
    from blockstore import FarFolder
    from prefect.filesystems import LocalFileSystem

    store = tmp_path / "store"
    name = f"folpipe-concurrent-{kind}"
    block = (FarFolder if kind == "far" else LocalFileSystem)(basepath=str(store))
    block.save(name, overwrite=True)  # called outside an event loop: runs synchronously
    root = _chain(tmp_path / "wf")
    script = RUN_THROUGH_BLOCK.format(tests=str(Path(__file__).parent.parent))
    command = [sys.executable, "-c", script, kind, name, str(root)]
    runs = [
        subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    documents = []
    for process in runs:
        out, err = process.communicate(timeout=400)
        assert process.returncode == 0, err.decode()[-3000:]
        documents.append(json.loads(out.decode().strip().splitlines()[-1]))
    calls = [row["model_calls"] for doc in documents for row in doc["tasks"] if row["path"]]
    assert sum(calls) == 6, [
        {row["path"]: (row["status"], row["model_calls"]) for row in doc["tasks"]}
        for doc in documents
    ]
    assert all(doc["context"]["six"] == "six done" for doc in documents)
    assert not (root / ".folpipe" / "results").exists()  # everything went to the block
    locks = sorted((store / "locks").iterdir())
    if kind == "far":  # leases, each marked free once its run let go
        assert len(locks) == 6 and all(json.loads(p.read_text())["released"] for p in locks)
    else:
        assert locks == []
