"""A FIFO, a socket or a device where a workflow's file belongs is refused, never waited on.

A plain ``open`` of a FIFO blocks until something writes to it: one ``mkfifo`` in a folder
hung ``folpipe validate`` (and every command that loads the folder) forever. Every file the
loader, the providers and the stores read goes through ``_process.files.read_regular``: a
coded diagnostic or error instead, at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import write_workflow

from prefect_folpipe._process.files import NotAFile, read_regular
from prefect_folpipe.compile.report import read_record
from prefect_folpipe.providers.scripted import RepliesFileError, load_replies
from prefect_folpipe.validate import validate_workflow

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo"),
]


def _hostile(root: Path) -> Path:
    """A valid root with FIFOs for a task.yaml, an instructions.md, an included snippet, a
    tools module, a hook and a data file."""
    write_workflow(
        root,
        {
            "instructions.md": "Coordinate.",
            "subtasks/10_a/task.yaml": "description: a\n",
            "subtasks/20_b/instructions.md": "Probe.",
            "subtasks/30_c/instructions.md": 'Answer.\n{% include "style" %}\n',
            "subtasks/40_d/instructions.md": "Do.",
            "shared/instructions/.keep": "",
        },
    )
    for rel in (
        "subtasks/10_a/instructions.md",
        "subtasks/20_b/tools/probe.py",
        "subtasks/20_b/hooks/pre_run.py",
        "subtasks/20_b/data.csv",
        "shared/instructions/style.md",
        "subtasks/40_d/task.yaml",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)
    return root


def test_read_regular_refuses_what_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"0123456789")
    os.mkfifo(tmp_path / "fifo")
    assert read_regular(tmp_path / "file") == b"0123456789"
    assert read_regular(tmp_path / "file", 4) == b"0123"
    with pytest.raises(NotAFile):
        read_regular(tmp_path / "fifo")
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing")


def test_read_regular_reads_a_file_that_grew_since_its_size_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It asks for what the file's size says (not ``limit`` bytes, each read allocating as
    much), and reads on up to ``limit`` when the file held more by then."""
    from prefect_folpipe._process import files

    (tmp_path / "file").write_bytes(b"0123456789")
    real = os.fstat

    def stale(descriptor: int) -> os.stat_result:
        info = list(real(descriptor))
        info[6] = 3  # st_size, as taken before the file grew
        return os.stat_result(info)

    monkeypatch.setattr(files.os, "fstat", stale)
    assert read_regular(tmp_path / "file", 8) == b"01234567"
    assert read_regular(tmp_path / "file") == b"0123456789"


def test_a_folder_with_fifos_is_a_list_of_coded_problems(tmp_path: Path) -> None:
    root = _hostile(tmp_path / "wf")
    found = {(d.code, d.file) for d in validate_workflow(root)}
    assert ("FP108", "subtasks/10_a/instructions.md") in found
    assert ("FP108", "subtasks/40_d/task.yaml") in found
    codes = {code for code, _ in found}
    assert {"FP214", "FP225", "FP120"} <= codes  # the tools module, the hook, the snippet
    imported = validate_workflow(root, import_tools=True)  # the import is refused too
    assert "FP214" in {d.code for d in imported}


def test_stores_and_replies_refuse_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "record.json")
    os.mkfifo(tmp_path / "replies.yaml")
    assert read_record(tmp_path / "record.json") is None
    with pytest.raises(RepliesFileError) as caught:
        load_replies(tmp_path / "replies.yaml")
    assert caught.value.code == "FP304"


@pytest.mark.parametrize("args", [("validate", "--json"), ("plan", "--json")])
def test_commands_on_a_folder_with_fifos_end_with_codes(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    root = _hostile(tmp_path / "wf")
    done = subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", args[0], str(root), *args[1:]],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode in (1, 2), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    codes = {item["code"] for item in json.loads(done.stdout)["errors"]}
    assert "FP108" in codes


def test_a_workflow_file_of_gigabytes_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A sparse file costs its author nothing and a plain read all the memory it claims: a
    2 GB instructions.md took 4 GB and 15 s to be called valid. Past 8 MB a workflow file is
    refused (FP108 for the task's own files, FP214 for a tools module), whatever it holds."""
    from prefect_folpipe._process.files import MAX_WORKFLOW_FILE, TooLarge, read_bounded

    root = write_workflow(
        tmp_path / "wf",
        {"instructions.md": "Coordinate.", "subtasks/a/task.yaml": "description: a\n"},
    )
    huge = root / "subtasks" / "a" / "instructions.md"
    with huge.open("wb") as handle:
        handle.truncate(2 * 1024**3)
    module = root / "subtasks" / "a" / "tools" / "big.py"
    module.parent.mkdir()
    with module.open("wb") as handle:
        handle.truncate(MAX_WORKFLOW_FILE + 1)
    with pytest.raises(TooLarge):
        read_bounded(huge, MAX_WORKFLOW_FILE)
    problems = {(d.code, d.file): d.message for d in validate_workflow(root, import_tools=True)}
    assert "larger than" in problems[("FP108", "subtasks/a/instructions.md")]
    assert "FP214" in {code for code, _ in problems}


def test_an_answers_file_of_gigabytes_is_refused_unread(tmp_path: Path) -> None:
    """``folpipe plan`` reads the scripted replies for the checkpoint keys: a 3 GB sparse
    replies.yaml was read whole by it. A replies file or cassette over 256 MB is refused by
    its size, before a byte is read."""
    from prefect_folpipe.errors import ConfigError
    from prefect_folpipe.providers.replay import load_cassette

    replies, cassette = tmp_path / "replies.yaml", tmp_path / "cassette.json"
    for file in (replies, cassette):
        with file.open("wb") as handle:
            handle.truncate(3 * 1024**3)
    with pytest.raises(RepliesFileError, match="larger than") as caught:
        load_replies(replies)
    assert caught.value.code == "FP304"
    with pytest.raises(ConfigError, match="larger than") as refused:
        load_cassette(cassette)
    assert refused.value.code == "FP327"
