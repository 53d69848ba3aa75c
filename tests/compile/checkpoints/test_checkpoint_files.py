"""Checkpoint files are data, never code (issue 11 point 13): JSON records, mode 0600, and a
planted or tampered file is a cache miss with a warning instead of being deserialised."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
from prefect.serializers import JSONSerializer, PickleSerializer

pytestmark = pytest.mark.prefect


class Planted:
    """What an attacker leaves in the results folder: unpickling it runs a command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _workflow(make_workflow) -> Path:
    return make_workflow(
        {
            "task.yaml": {"name": "ckpt", "subtasks": {"execution_type": "sequential"}},
            "subtasks/10_draft/instructions.md": "Draft.",
            "subtasks/10_draft/task.yaml": {"output": ["text"]},
            "subtasks/20_review/instructions.md": "Review {text}.",
            "replies.yaml": {"tasks": {"draft": [{"output": {"text": "hello"}}]}},
        }
    )


def _checkpoint_of(root: Path, task: str) -> Path:
    [file] = (root / ".folpipe" / "results").glob(f"{task}-*")
    return file


def _pickled_record(marker: Path) -> bytes:
    metadata = ResultRecordMetadata(serializer=PickleSerializer(), storage_key="x")
    return ResultRecord(metadata=metadata, result=Planted(marker)).serialize()


def _decoder_record(marker: Path) -> bytes:
    """JSON on the outside, but naming a decoder of its own: Prefect would import and call it."""
    serializer = JSONSerializer(object_decoder="os.system")
    metadata = ResultRecordMetadata(serializer=serializer, storage_key="x")
    record = ResultRecord(metadata=metadata, result={"cmd": f"touch {marker}"})
    return record.serialize()


def test_checkpoints_are_owner_only_json_records(make_workflow, run):
    root = _workflow(make_workflow)
    assert run(root).status == "completed"
    folder = root / ".folpipe" / "results"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # the model-call journal beside the checkpoints (durability.md) is owner-only too
    for inner in folder.rglob("*"):
        assert stat.S_IMODE(inner.stat().st_mode) == (0o700 if inner.is_dir() else 0o600), inner
    for file in (path for path in folder.iterdir() if path.is_file()):
        record = json.loads(file.read_bytes())
        assert record["metadata"]["serializer"]["type"] == "json"
        assert record["metadata"]["serializer"]["object_decoder"] is None
        assert json.loads(record["result"])["delta"]  # the payload itself is plain JSON
    assert [row["status"] for row in run(root).tasks] == ["cached", "cached", "cached"]


@pytest.mark.parametrize(
    "plant",
    [_pickled_record, _decoder_record, lambda marker: b"\x80\x04not json at all"],
    ids=["pickle-record", "json-with-own-decoder", "raw-bytes"],
)
def test_a_planted_checkpoint_is_a_cache_miss_never_code(
    make_workflow, run, tmp_path: Path, caplog, plant
):
    root = _workflow(make_workflow)
    assert run(root).status == "completed"
    target = _checkpoint_of(root, "draft")
    marker = tmp_path / "owned"
    target.write_bytes(plant(marker))

    with caplog.at_level(logging.WARNING, logger="prefect_folpipe"):
        result = run(root)

    assert not marker.exists(), "a checkpoint file ran code"
    assert result.status == "completed"
    assert result.task("draft")["status"] == "completed"  # ran again instead of loading it
    assert result.task("review")["status"] == "cached"  # same output: downstream reuses
    assert any("FP517" in r.getMessage() and target.name in r.getMessage() for r in caplog.records)
    rewritten = json.loads(target.read_bytes())
    assert rewritten["metadata"]["serializer"]["type"] == "json"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_storage_block_gets_the_same_check(make_workflow, run, tmp_path: Path):
    """``RunOptions(result_storage=<block>)`` (e.g. S3): records are checked the same way."""
    import fsspec
    from prefect.filesystems import RemoteFileSystem

    from prefect_folpipe.compile import RunOptions

    bucket = f"folpipe-{tmp_path.name[-20:].replace('_', '-').lower()}"
    block = RemoteFileSystem(basepath=f"memory://{bucket}/results")
    block.save(bucket, overwrite=True)
    memory = fsspec.filesystem("memory")
    root = _workflow(make_workflow)
    assert run(root, options=RunOptions(result_storage=block)).status == "completed"
    [key] = [path for path in memory.ls(f"/{bucket}/results", detail=False) if "draft-" in path]
    assert json.loads(memory.cat(key))["metadata"]["serializer"]["type"] == "json"
    cached = run(root, options=RunOptions(result_storage=block))
    assert cached.task("draft")["status"] == "cached"

    marker = tmp_path / "owned"
    memory.pipe(key, _pickled_record(marker))
    again = run(root, options=RunOptions(result_storage=block))
    assert not marker.exists()
    assert again.task("draft")["status"] == "completed"


def test_a_failed_attempt_is_stored_as_plain_data(make_workflow, run):
    """Prefect persists a failed attempt's exception too: with a plain JSON serializer it could
    not ("Failed to serialize object of type 'ProviderError'", a warning on every failed task),
    so it is written as its type, code and masked message, never as an object to rebuild."""
    root = make_workflow(
        {
            "task.yaml": {"name": "broken"},
            "instructions.md": "Answer.",
            "replies.yaml": {"tasks": {"broken": [{"error": "auth", "message": "bad key"}]}},
        }
    )
    assert run(root).status == "failed"
    files = [p for p in (root / ".folpipe" / "results").iterdir() if p.is_file()]
    records = [json.loads(p.read_bytes()) for p in files]
    failures = [json.loads(r["result"]) for r in records]
    assert failures and all(f["error"] == "ProviderError" for f in failures), failures
    assert all("bad key" in f["message"] for f in failures)
    assert all(r["metadata"]["serializer"]["object_decoder"] is None for r in records)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)


def test_runs_never_ask_the_server_for_its_default_result_storage(
    make_workflow, run, monkeypatch
) -> None:
    """The flow and its branch subflows name the run's checkpoint folder as their result
    storage (their own results unpersisted): without it Prefect reads the server's default
    result storage through a new synchronous client at every flow run (~0.1 s each)."""
    import prefect.results as results

    asked: list[str] = []

    def sync_lookup() -> None:
        asked.append("sync")

    async def async_lookup() -> None:
        asked.append("async")

    monkeypatch.setattr(results, "_read_server_default_result_storage_block_id", sync_lookup)
    monkeypatch.setattr(results, "_aread_server_default_result_storage_block_id", async_lookup)
    root = make_workflow(
        {
            "task.yaml": {"name": "storage-lookup"},
            "subtasks/a/task.yaml": {"settings": {"branch_as": "subflow"}},
            "subtasks/a/subtasks/x/instructions.md": "X.",
            "subtasks/b/instructions.md": "B.",
            "replies.yaml": {"default": "ok"},
        }
    )
    result = run(root, fresh=True)
    assert result.status == "completed"
    assert {row["path"] for row in result.tasks} >= {"a/x", "b"}
    assert asked == []
