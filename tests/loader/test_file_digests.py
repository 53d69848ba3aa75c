"""A loaded task carries each of its own files' digests from the read its content hash made,
and a pass's manifest records those: what the checkpoint key covered, not the files as they
are when the pass ends (an edit during the run is not credited to a key that never saw it)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from prefect_folpipe.loader import file_digests, load
from prefect_folpipe.plan import key_parts
from tests.builders import write_files

FILES = {
    "task.yaml": "name: digests\nproviders:\n  default: scripted\n  scripted: {}\n",
    "shared/note.md": "Shared.\n",
    "subtasks/10_leaf/instructions.md": "Answer.\n",
    "subtasks/10_leaf/data.txt": "one\n",
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_task_carries_the_digests_of_the_bytes_its_hash_covered(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    workflow = load(tmp_path, import_tools=False).workflow
    assert workflow is not None
    root, leaf = workflow.root, workflow.root.children[0]
    assert leaf.file_digests == {"data.txt": _sha("one\n"), "instructions.md": _sha("Answer.\n")}
    assert leaf.file_digests == file_digests(leaf.folder)
    assert set(root.file_digests) == {"task.yaml"}  # shared/ is not the root's own, as in its hash
    assert root.file_digests == file_digests(root.folder, root=True)


def test_a_manifest_records_the_files_the_key_covered(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    workflow = load(tmp_path, import_tools=False).workflow
    assert workflow is not None
    leaf = workflow.root.children[0]
    (leaf.folder / "data.txt").write_text("edited during the run\n")
    parts = key_parts(leaf, {}, phase="single", salt="")
    assert parts["files"]["data.txt"] == _sha("one\n")
    assert file_digests(leaf.folder)["data.txt"] == _sha("edited during the run\n")


def test_a_load_without_hashes_reads_the_files_when_a_pass_asks(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    workflow = load(tmp_path, import_tools=False, content_hashes=False).workflow
    assert workflow is not None
    leaf = workflow.root.children[0]
    assert leaf.content_hash == "" and leaf.file_digests == {}
    (leaf.folder / "data.txt").write_text("two\n")
    assert key_parts(leaf, {}, phase="single", salt="")["files"]["data.txt"] == _sha("two\n")
