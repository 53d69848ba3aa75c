"""Stores that cannot be forged (issue 31 point 2): every journal entry, approval answer and
checkpoint is signed with a key kept outside the store and bound to its key; an edited entry
is a miss with one FP540 warning naming it, never used."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest
from test_approval import Person, _release
from test_journal import _agent, _journal_files

from prefect_folpipe.compile import storekey
from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.compile.storekey import ForgedEntry, seal, unseal

pytestmark = pytest.mark.prefect


# -- the key and the signature ---------------------------------------------------------------


def test_the_per_user_key_is_made_once_outside_the_workflow(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(storekey.KEY_ENV, raising=False)
    monkeypatch.delenv(storekey.SECRET_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    file = tmp_path / "config" / "folpipe" / "store.key"
    assert storekey.user_key_file() == file
    key = storekey.store_key()
    assert file.read_bytes().strip() == key and len(key) == 64
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert storekey.store_key() == key
    assert sorted(p.name for p in file.parent.iterdir()) == ["store.key"]  # no temporary left


def test_the_environment_and_a_secret_block_give_a_shared_key(monkeypatch) -> None:
    monkeypatch.setenv(storekey.KEY_ENV, "shared by every worker")
    assert storekey.store_key() == b"shared by every worker"
    assert "environment variable" in storekey.describe_key()
    monkeypatch.delenv(storekey.KEY_ENV)
    monkeypatch.setenv(storekey.SECRET_ENV, "folpipe-store-key-test-block")
    monkeypatch.setattr(storekey, "secret_block_text", lambda name: f"from block {name}")
    assert storekey.store_key() == b"from block folpipe-store-key-test-block"
    monkeypatch.setenv(storekey.SECRET_ENV, "folpipe-store-key-missing-block")

    def missing(name: str) -> str:
        raise ValueError(f"Unable to find block document named {name}")

    monkeypatch.setattr(storekey, "secret_block_text", missing)
    with pytest.raises(storekey.StoreKeyError) as raised:
        storekey.store_key()
    assert raised.value.code == "FP542" and "folpipe-store-key-missing-block" in str(raised.value)


def test_an_entry_is_bound_to_its_content_its_key_and_the_store_key(monkeypatch) -> None:
    monkeypatch.setenv(storekey.KEY_ENV, "k1")
    sealed = seal("journal", "journal/a/1/fp.json", b'{"answer": "yes", "n": 1}')
    assert json.loads(unseal("journal", "journal/a/1/fp.json", sealed)) == {"answer": "yes", "n": 1}
    edited = sealed.replace(b'"yes"', b'"no"')
    for kind, binding, data in [
        ("journal", "journal/a/1/fp.json", edited),  # edited
        ("journal", "journal/a/1/other.json", sealed),  # copied under another key
        ("approvals", "journal/a/1/fp.json", sealed),  # into another store
        ("journal", "journal/a/1/fp.json", b'{"answer": "yes", "n": 1}'),  # never signed
        ("journal", "journal/a/1/fp.json", b"[" * 100_000),  # damaged
    ]:
        with pytest.raises(ForgedEntry):
            unseal(kind, binding, data)
    monkeypatch.setenv(storekey.KEY_ENV, "k2")  # another key
    with pytest.raises(ForgedEntry):
        unseal("journal", "journal/a/1/fp.json", sealed)


# -- the stores on real runs -------------------------------------------------------------------


def _forged(caplog: Any, entry: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if "FP540" in r.getMessage() and entry in r.getMessage()
    ]


def test_an_edited_journal_answer_is_not_used_and_paid_once_more(
    make_workflow, run, tmp_path: Path, caplog
) -> None:
    log = tmp_path / "lookups.log"
    files = _agent(4, {"echo": True}, settings={"timeout": 1, "max_retries": 0})
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": 1.25}
    wf = make_workflow(files)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOOKUP_LOG", str(log))
        first = run(wf)
        assert first.status == "failed" and first.task("agent")["model_calls"] == 3
        # the attacker makes the last answered call ask the tool for 99 instead of 2
        [entry] = [p for p in _journal_files(wf) if '"n":2' in p.read_text()]
        entry.write_text(entry.read_text().replace('"n":2', '"n":99'))
        (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
        with caplog.at_level(logging.WARNING, logger="prefect_folpipe"):
            second = run(wf)
    assert second.status == "completed", second.error
    assert "99" not in log.read_text().split(), "the forged tool argument was used"
    agent = second.task("agent")
    # untouched, the resume pays 1 call; the forged answer is paid once more
    assert (agent["replayed_calls"], agent["model_calls"]) == (2, 2)
    name = entry.relative_to(wf / ".folpipe" / "results").as_posix()
    assert len(_forged(caplog, name)) == 1
    [warning] = [w for w in second.warnings if w["code"] == "FP540"]
    assert (warning["task"], warning["store"], warning["entry"]) == ("agent", "journal", name)
    assert second.durable and second.to_dict()["warnings"] == second.warnings


def test_an_edited_approval_answer_is_not_trusted(make_workflow, run, caplog) -> None:
    wf = make_workflow(_release())
    no = {"": {"approved": "no", "comment": "not this one"}}
    first = run(wf, options=RunOptions(approvals=no))
    assert first.status == "completed" and first.context["approved"] is False
    [answer] = (wf / ".folpipe" / "results" / "approvals").glob("ship-*.json")
    assert json.loads(answer.read_text())["answer"]["approved"] is False
    answer.write_text(answer.read_text().replace('"approved":false', '"approved":true'))
    with caplog.at_level(logging.WARNING, logger="prefect_folpipe"):
        forged = run(wf)  # nobody to ask: the gate fails instead of passing
    assert forged.task("ship")["status"] == "failed"
    assert "nobody can answer" in forged.task("ship")["error"]
    assert forged.context.get("approved") is not True
    assert forged.task("announce")["status"] != "completed"
    name = f"approvals/{answer.name}"
    assert len(_forged(caplog, name)) == 1
    assert [(w["code"], w["task"]) for w in forged.warnings] == [("FP540", "ship")]
    person = Person({"approved": "yes", "comment": "asked again"})
    asked = run(wf, options=RunOptions(ask=person))  # a person is asked again
    assert len(person.questions) == 1 and asked.context["approved"] is True


def test_an_edited_checkpoint_is_a_miss(make_workflow, run, caplog) -> None:
    wf = make_workflow(
        {
            "task.yaml": {"name": "ckpt", "subtasks": {"execution_type": "sequential"}},
            "subtasks/10_draft/instructions.md": "Draft.",
            "subtasks/10_draft/task.yaml": {"output": ["text"]},
            "subtasks/20_review/instructions.md": "Review {text}.",
            "replies.yaml": {"tasks": {"draft": [{"output": {"text": "hello"}}]}},
        }
    )
    assert run(wf).status == "completed"
    [checkpoint] = (wf / ".folpipe" / "results").glob("draft-*")
    record = json.loads(checkpoint.read_bytes())
    assert record["folpipe_mac"].startswith("hmac-sha256:")
    checkpoint.write_text(checkpoint.read_text().replace("hello", "injected"))
    with caplog.at_level(logging.WARNING, logger="prefect_folpipe"):
        again = run(wf)
    assert again.task("draft")["status"] == "completed"  # ran again instead of reusing it
    assert again.context["text"] == "hello"
    assert again.task("review")["status"] == "cached"
    assert len(_forged(caplog, checkpoint.name)) == 1
    assert [(w["code"], w["task"]) for w in again.warnings] == [("FP540", "draft")]
    assert "injected" not in checkpoint.read_text()  # replaced by the new, signed record
    assert [row["status"] for row in run(wf).tasks] == ["cached"] * 3
