"""Issue 31 point 4: any damage in any store is a miss.

A journal entry, a stored approval answer, a run record, a manifest or a checkpoint record that
is nested 200,000 levels deep, larger than a stored entry may be, or not JSON at all is read as
absent, with one coded warning (FP527; a checkpoint: FP517), never a ``RecursionError``, a
``MemoryError`` or a failed task.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from builders import SCRIPTED

from prefect_folpipe._process.stored import (
    DAMAGED,
    MAX_BYTES,
    MAX_DEPTH,
    DamagedEntry,
    load_stored,
    read_stored_file,
)

DEEP = b"[" * 200_000
DEEP_OBJECTS = b'{"a":' * 200_000
OVERSIZED = b'"' + b"x" * (MAX_BYTES + 1) + b'"'
DAMAGE = {"deep": DEEP, "deep objects": DEEP_OBJECTS, "not json": b"\x80\x04pickle", "empty": b""}


@pytest.mark.parametrize("data", [*DAMAGE.values(), b"[" * 600 + b"]" * 600], ids=str)
def test_damage_is_a_damaged_entry(data: bytes) -> None:
    with pytest.raises(DamagedEntry) as caught:
        load_stored(data)
    assert caught.value.code == DAMAGED


def test_an_oversized_entry_is_damaged_and_a_file_is_not_read_past_the_bound(
    tmp_path: Path,
) -> None:
    with pytest.raises(DamagedEntry, match="larger than"):
        load_stored(OVERSIZED)
    file = tmp_path / "big.json"
    file.write_bytes(OVERSIZED)
    with pytest.raises(DamagedEntry, match="larger than"):
        read_stored_file(file)


def test_entries_within_bounds_read_as_json() -> None:
    nested: Any = "x"
    for _ in range(MAX_DEPTH - 1):
        nested = [nested]
    assert load_stored(json.dumps(nested).encode()) == nested
    assert load_stored('{"a": [1, "é"]}') == {"a": [1, "é"]}


# -- the journal ------------------------------------------------------------------------------


class _Tools:
    def definitions(self) -> list[Any]:
        from prefect_folpipe._messages import ToolDefinition

        return [ToolDefinition("look", "read", {"type": "object", "properties": {}})]

    async def call(self, call: Any) -> Any:
        from prefect_folpipe._messages import ToolResult

        return ToolResult(call.id, call.name, "looked")

    def replayed(self, call: Any, result: Any) -> None:
        pass


def _agent_pass(tmp_path: Path, store: Any) -> Any:
    """An agent pass of three model calls (two tool calls, then an echo of it all)."""
    from builders import make_task, make_tool

    from prefect_folpipe.agent.journal import Journal
    from prefect_folpipe.agent.loop import AgentPass
    from prefect_folpipe.providers.scripted import ScriptedProvider

    task = make_task("t", folder=tmp_path / "t", tools=[make_tool("look")])
    replies = {"default": [{"tool_calls": [{"name": "look", "arguments": {}}]}] * 2}
    replies["default"].append({"echo": True})
    return AgentPass(
        task=task,
        provider=ScriptedProvider(replies),
        system="SYS",
        user_message="{}",
        tools=_Tools(),
        journal=Journal(store, task.path, "t|single|[]", workflow_root=tmp_path),
    )


def _journal_run(tmp_path: Path) -> tuple[Any, Any]:
    from prefect_folpipe.compile.checkpoints._store import StorageFiles

    store = StorageFiles(tmp_path / "results")
    return store, _agent_pass(tmp_path, store)


@pytest.mark.parametrize("damage", list(DAMAGE), ids=str)
def test_a_damaged_journal_entry_is_a_miss_with_one_coded_warning(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect_folpipe.agent.loop import converse

    store, first = _journal_run(tmp_path)
    done = asyncio.run(converse(first))
    assert done.model_calls == 3
    entries = sorted((tmp_path / "results" / "journal").rglob("*.json"))
    assert len(entries) == 3
    for entry in entries:
        entry.write_bytes(DAMAGE[damage])
    package = logging.getLogger("prefect_folpipe")  # Prefect's set-up may stop propagation
    package.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING):
            again = asyncio.run(converse(_agent_pass(tmp_path, store)))
    finally:
        package.removeHandler(caplog.handler)
    assert (again.replayed_calls, again.model_calls) == (0, 3)
    assert again.text == done.text
    warned = sorted({r.getMessage() for r in caplog.records if DAMAGED in r.getMessage()})
    if damage != "empty":  # an empty file is an entry never written: a plain miss
        # the first entry goes live, and with it every later call (not read)
        assert len(warned) == 1 and "journal entry journal/t/" in warned[0]


@pytest.mark.parametrize("damage", ["oversized", "a folder"])
def test_an_oversized_or_unreadable_journal_file_is_a_miss(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect_folpipe.agent.loop import converse

    store, first = _journal_run(tmp_path)
    asyncio.run(converse(first))
    entries = sorted((tmp_path / "results" / "journal").rglob("*.json"))
    for entry in entries:
        if damage == "oversized":
            entry.write_bytes(OVERSIZED)
        else:  # a folder where the entry belongs
            entry.unlink()
            entry.mkdir()
    with caplog.at_level(logging.WARNING):
        again = asyncio.run(converse(_agent_pass(tmp_path, store)))
    assert again.model_calls == 3 and again.replayed_calls == 0
    warned = [r.getMessage() for r in caplog.records if DAMAGED in r.getMessage()]
    assert warned and any(entry.name in warned[0] for entry in entries)
    assert ("larger than" if damage == "oversized" else "Is a directory") in warned[0]


# -- approvals, run records, manifests, checkpoints ---------------------------------------------


@pytest.mark.parametrize("damage", ["deep", "deep objects", "not json"])
def test_a_damaged_stored_approval_answer_is_asked_again(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect_folpipe.compile.approvals._gate import ApprovalGates

    gates = ApprovalGates(tmp_path, keys=None)
    asyncio.run(gates.write("approvals/k.json", {"task": "t", "answer": {"approved": True}}))
    assert asyncio.run(gates.read("approvals/k.json"))["answer"] == {"approved": True}
    (tmp_path / "approvals" / "k.json").write_bytes(DAMAGE[damage])
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(gates.read("approvals/k.json")) is None
    assert any(DAMAGED in r.getMessage() and "k.json" in r.getMessage() for r in caplog.records)


def test_a_damaged_run_record_is_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from prefect_folpipe.compile.report._runs import list_runs, read_record, runs_dir, write_record

    folder = runs_dir(tmp_path)
    folder.mkdir(parents=True)
    write_record(folder / "a-good.json", {"status": "failed", "flow_run": "x"})  # signed
    (folder / "b-deep.json").write_bytes(DEEP)
    (folder / "c-huge.json").write_bytes(OVERSIZED)
    with caplog.at_level(logging.WARNING):
        runs = list_runs(tmp_path)
        assert read_record(folder / "b-deep.json") is None
    assert [r["flow_run"] for r in runs] == ["x"]
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "b-deep.json" in messages and "c-huge.json" in messages and DAMAGED in messages


def test_a_damaged_manifest_or_checkpoint_is_a_miss(tmp_path: Path) -> None:
    from prefect_folpipe.compile.checkpoints._files import UntrustedCheckpoint, check_record
    from prefect_folpipe.plan._manifest import manifest_file, read_manifest

    file = manifest_file(tmp_path, "a", "single")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(DEEP)
    assert read_manifest(tmp_path, "a", "single") is None
    for data in (DEEP, DEEP_OBJECTS, OVERSIZED):
        with pytest.raises(UntrustedCheckpoint):
            check_record(data)
    record = {"metadata": {"serializer": {"type": "json"}}, "result": "[" * 200_000}
    with pytest.raises(UntrustedCheckpoint, match="payload"):
        check_record(json.dumps(record).encode())


def test_a_deeply_nested_journal_entry_does_not_fail_the_task(make_workflow: Any, run: Any) -> None:
    """The end to end case of the issue: every journal entry of a run replaced by 200,000
    ``[``; the next run (``--fresh`` reads the journal to find its own entries) completes."""
    root = make_workflow(
        {
            "task.yaml": {"name": "deep", "providers": SCRIPTED},
            "replies.yaml": {"default": [{"tool_calls": [{"name": "noop"}]}, "done"]},
            "tools.md": "## noop\n\nNothing.\n\n```python\ndef noop() -> str:\n"
            "    return 'ok'\n```\n",
            "instructions.md": "Call noop, then answer.",
        }
    )
    first = run(root)
    assert first.status == "completed", first.error
    entries = sorted((root / ".folpipe" / "results" / "journal").rglob("*.json"))
    assert entries
    for entry in entries:
        entry.write_bytes(DEEP)
    again = run(root, fresh=True)
    assert again.status == "completed", again.error
