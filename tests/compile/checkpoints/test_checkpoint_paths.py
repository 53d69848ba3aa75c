"""The checkpoint folder resolves record paths itself (the folder once, not at every read):
it must refuse what Prefect's ``LocalFileSystem`` refuses — any path outside the folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from prefect_folpipe.compile.checkpoints._files import CheckpointStorage


@pytest.fixture
def storage(tmp_path: Path) -> CheckpointStorage:
    (tmp_path / "results").mkdir()
    os.symlink("/etc", tmp_path / "results" / "escape")
    return CheckpointStorage(basepath=str(tmp_path / "results"))


def test_records_resolve_inside_the_folder(storage: CheckpointStorage, tmp_path: Path) -> None:
    base = (tmp_path / "results").resolve()
    assert storage._resolve_path("abc") == base / "abc"
    assert storage._resolve_path("a/./b/../c") == base / "a" / "c"
    assert storage._resolve_path(str(base / "x")) == base / "x"
    # the folder itself, as Prefect asks for it with every record it writes: resolved once
    assert storage._resolve_path("") == base == Path(os.path.realpath(base))
    storage.write_path("k1", b'{"x": 1}')
    written = json.loads((base / "k1").read_bytes())  # signed with the store key
    assert written["x"] == 1 and written["folpipe_mac"].startswith("hmac-sha256:")
    assert (base / "k1").stat().st_mode & 0o777 == 0o600


def test_a_record_is_owner_only_under_a_permissive_umask(
    storage: CheckpointStorage, tmp_path: Path
) -> None:
    previous = os.umask(0)
    try:
        storage.write_path("deep/k2", b'{"x": 2}')
    finally:
        os.umask(previous)
    assert (tmp_path / "results" / "deep" / "k2").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "path", ["../outside", "/etc/passwd", "a/../../outside", "escape/passwd", "escape", "~/x"]
)
def test_paths_outside_the_folder_are_refused(storage: CheckpointStorage, path: str) -> None:
    with pytest.raises(ValueError, match="outside of the base path"):
        storage._resolve_path(path)
    with pytest.raises(ValueError, match="outside of the base path"):
        storage.write_path(path, b"{}")


def test_a_sibling_folder_with_the_same_prefix_is_outside(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    storage = CheckpointStorage(basepath=str(tmp_path / "results"))
    with pytest.raises(ValueError):
        storage._resolve_path(str(tmp_path / "results-other" / "k"))


def test_a_record_that_is_a_link_out_of_the_folder_is_refused(
    storage: CheckpointStorage, tmp_path: Path
) -> None:
    """A plain record name is read in place only when it is a regular file; a link with a
    record's name goes through the full check (and out of the folder is refused)."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"x": 1}')
    os.symlink(secret, tmp_path / "results" / "step-abc")
    with pytest.raises(ValueError, match="outside of the base path"):
        storage.read_path("step-abc")
    storage.write_path("step-def", b'{"y": 2}')
    assert storage._resolve_path("step-def") == (tmp_path / "results").resolve() / "step-def"
