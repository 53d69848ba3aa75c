"""The static reading of a tools.md is kept between processes (``loader.parsecache``), and a
stored reading is used only while it is still right: same bytes, same place, same folpipe,
the modules its code imports still found (or still missing) as they were. The cache can be
turned off, lives outside the workflow folder, is owner-only, and a broken one changes
nothing but speed (issue 15 point 1: a fresh ``folpipe validate``)."""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from prefect_folpipe.loader.tools import _toolsmd as toolsmd
from prefect_folpipe.loader.tools import parsecache
from prefect_folpipe.validate import check
from tests.builders import forget_parses, make_tool, write_files

TOOL = """## lookup
> type: python

Look things up.

```python
{imports}
def lookup(query: str, limit: {limit_type} = {limit}) -> dict:
    \"\"\"Find it.

    Args:
        query: What to look for.
    \"\"\"
    return {{"query": query}}
```

## broken
> type: nonsense
"""


def _tools_md(imports: str = "", limit_type: str = "int", limit: str = "3") -> str:
    return TOOL.format(imports=imports, limit_type=limit_type, limit=limit)


def _workflow(root: Path, tools: str) -> Path:
    write_files(
        root,
        {
            "task.yaml": "name: cached\nproviders:\n  default: scripted\n  scripted: {}\n",
            "subtasks/01_leaf/instructions.md": "Answer.\n",
            "subtasks/01_leaf/tools.md": tools,
        },
    )
    return root


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(parsecache.ENV, str(folder))
    _new_process()
    return folder


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tools.md files parsed (not taken from a cache)."""
    seen: list[str] = []
    real = toolsmd._parse_text

    def counting(text: str, file: Path, owner: str, import_tools: bool):  # type: ignore[no-untyped-def]
        seen.append(str(file))
        return real(text, file, owner, import_tools)

    monkeypatch.setattr(toolsmd, "_parse_text", counting)
    return seen


_new_process = forget_parses


def _validate(root: Path) -> tuple[list[object], list[object]]:
    loaded, diagnostics = check(root, import_tools=False)
    assert loaded.workflow is not None
    leaf = loaded.workflow.root.children[0]
    return list(leaf.tools), sorted(diagnostics, key=str)


def _uncached(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[object], list[object]]:
    with monkeypatch.context() as patch:
        patch.setenv(parsecache.ENV, "off")
        _new_process()
        result = _validate(root)
    _new_process()
    return result


def _rows(folder: Path) -> int:
    with sqlite3.connect(folder / parsecache.FILE) as db:
        return int(db.execute("SELECT count(*) FROM parses").fetchone()[0])


def test_a_new_process_takes_the_stored_reading_and_gets_the_same_answer(
    tmp_path: Path, cache_dir: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workflow(tmp_path / "wf", _tools_md())
    first = _validate(root)
    assert len(parses) == 1 and _rows(cache_dir) == 1
    _new_process()
    second = _validate(root)
    assert len(parses) == 1  # not parsed again
    assert second == first == _uncached(root, monkeypatch)
    tool = second[0][0]
    assert tool.name == "lookup" and tool.parameters["properties"]["limit"]["default"] == 3
    assert [d.code for d in second[1]] == ["FP205"]  # the broken section, reported again


def test_an_edited_file_is_read_again(tmp_path: Path, cache_dir: Path, parses: list[str]) -> None:
    root = _workflow(tmp_path / "wf", _tools_md())
    _validate(root)
    (root / "subtasks/01_leaf/tools.md").write_text(_tools_md(limit="7"))
    _new_process()
    tools, _ = _validate(root)
    assert len(parses) == 2
    assert tools[0].parameters["properties"]["limit"]["default"] == 7


def test_the_same_bytes_elsewhere_are_a_different_entry(
    tmp_path: Path, cache_dir: Path, parses: list[str]
) -> None:
    first = _workflow(tmp_path / "one", _tools_md())
    second = _workflow(tmp_path / "two", _tools_md())
    _validate(first)
    tools, _ = _validate(second)
    assert len(parses) == 2 and _rows(cache_dir) == 2
    assert tools[0].source_file == str(second / "subtasks/01_leaf/tools.md")


def test_a_module_installed_since_is_found(
    tmp_path: Path, cache_dir: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workflow(tmp_path / "wf", _tools_md(imports="import fp_parse_cache_probe"))
    _, diagnostics = _validate(root)
    assert any("fp_parse_cache_probe" in d.message for d in diagnostics)
    site = tmp_path / "site"
    write_files(site, {"fp_parse_cache_probe.py": "VALUE = 1\n"})
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    _new_process()
    tools, diagnostics = _validate(root)
    assert len(parses) == 2  # the stored reading said "missing": read again
    assert [t.name for t in tools] == ["lookup"]
    assert not any("fp_parse_cache_probe" in d.message for d in diagnostics)

    monkeypatch.undo()  # ... and uninstalled again: the stored "found" no longer holds
    monkeypatch.setenv(parsecache.ENV, str(cache_dir))
    sys.modules.pop("fp_parse_cache_probe", None)
    importlib.invalidate_caches()
    _new_process()
    _, diagnostics = _validate(root)
    assert any("fp_parse_cache_probe" in d.message for d in diagnostics)


def test_a_reading_json_would_change_is_not_stored(
    tmp_path: Path, cache_dir: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # an infinite default: JSON has no such number, so the entry is not written
    root = _workflow(tmp_path / "wf", _tools_md(limit_type="float", limit="1e999"))
    first = _validate(root)
    assert first[0][0].parameters["properties"]["limit"]["default"] == float("inf")
    assert _rows(cache_dir) == 0
    _new_process()
    assert _validate(root) == first == _uncached(root, monkeypatch)
    assert len(parses) == 3  # every load read it: this one, the next, the uncached one


def test_import_tools_never_uses_the_cache(tmp_path: Path, cache_dir: Path) -> None:
    root = _workflow(tmp_path / "wf", _tools_md())
    loaded, _ = check(root, import_tools=True)
    assert loaded.workflow is not None
    assert not (cache_dir / parsecache.FILE).exists()


@pytest.mark.parametrize("setting", ["0", "off", ""])
def test_the_cache_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: list[str], setting: str
) -> None:
    monkeypatch.setenv(parsecache.ENV, setting)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _new_process()
    root = _workflow(tmp_path / "wf", _tools_md())
    _validate(root)
    _new_process()
    _validate(root)
    assert len(parses) == 2
    assert not (tmp_path / "xdg").exists()


def test_default_place_is_the_user_cache_folder_not_the_workflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(parsecache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _new_process()
    root = _workflow(tmp_path / "wf", _tools_md())
    _validate(root)
    _new_process()
    folder = tmp_path / "xdg" / "folpipe"
    assert _rows(folder) == 1
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / parsecache.FILE).stat().st_mode) == 0o600
    assert not any(p.name == parsecache.FILE for p in root.rglob("*"))


@pytest.mark.parametrize("damage", ["garbage file", "a file where the folder goes", "bad row"])
def test_a_broken_cache_changes_nothing_but_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: list[str], damage: str
) -> None:
    root = _workflow(tmp_path / "wf", _tools_md())
    expected = _uncached(root, monkeypatch)
    folder = tmp_path / "cache"
    if damage == "garbage file":
        folder.mkdir()
        (folder / parsecache.FILE).write_bytes(os.urandom(4096))
    elif damage == "a file where the folder goes":
        folder.write_text("not a folder")
    monkeypatch.setenv(parsecache.ENV, str(folder))
    _new_process()
    assert _validate(root) == expected
    if damage == "bad row":  # an entry that does not decode is read as a miss
        with sqlite3.connect(folder / parsecache.FILE) as db:
            db.execute("UPDATE parses SET value = ?", (json.dumps({"tools": [[1]]}),))
        _new_process()
        assert _validate(root) == expected
        assert len(parses) == 3  # uncached, first, and again after the bad row


def test_another_folpipe_build_does_not_read_this_ones_entries(
    tmp_path: Path, cache_dir: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workflow(tmp_path / "wf", _tools_md())
    _validate(root)
    _new_process()
    monkeypatch.setattr(parsecache, "_BUILD", ["another build"])
    _validate(root)
    assert len(parses) == 2 and _rows(cache_dir) == 2


@pytest.mark.slow
def test_fresh_validate_processes_agree_with_and_without_the_cache(
    tmp_path: Path, cache_dir: Path
) -> None:
    root = _workflow(tmp_path / "wf", _tools_md(imports="import json"))

    def validate(setting: str) -> dict[str, object]:
        env = dict(os.environ, **{parsecache.ENV: setting})
        done = subprocess.run(
            [sys.executable, "-m", "prefect_folpipe", "validate", "--json", str(root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.stderr == ""
        return json.loads(done.stdout)

    stored, reused, off = validate(str(cache_dir)), validate(str(cache_dir)), validate("0")
    assert _rows(cache_dir) == 1
    assert stored == reused == off
    assert stored["ok"] is False and stored["errors"]  # the broken section is reported each time


def test_loads_in_other_threads_share_the_cache(
    tmp_path: Path, cache_dir: Path, parses: list[str]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    root = _workflow(tmp_path / "wf", _tools_md())
    first = _validate(root)
    toolsmd._PARSED.clear()  # the same process, not the same thread: the stored entry serves
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: _validate(root), range(4)))
    assert all(result == first for result in results)
    assert len(parses) == 1


def test_nothing_is_left_open_beside_the_cache_after_a_load(
    tmp_path: Path, cache_dir: Path
) -> None:
    root = _workflow(tmp_path / "wf", _tools_md())
    _validate(root)
    _validate(root)
    assert sorted(p.name for p in cache_dir.iterdir()) == [parsecache.FILE]  # no -wal, -shm


def test_old_entries_expire_and_the_oldest_go_over_the_cap(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write drops entries not written for ``KEEP_S`` and, over ``MAX_ROWS``, the oldest
    (the newest — this load's — always stay)."""
    cache = parsecache.ParseCache(cache_dir, "build")
    cache.put("expired", "{}")
    cache.put("old", "{}")
    cache.flush()
    with sqlite3.connect(cache_dir / parsecache.FILE) as db:
        db.execute("UPDATE parses SET written = 0 WHERE key = 'expired'")
        db.execute("UPDATE parses SET written = written - 60 WHERE key = 'old'")
    monkeypatch.setattr(parsecache, "MAX_ROWS", 2)
    for key in ("new1", "new2"):
        cache.put(key, "{}")
    cache.flush()
    with sqlite3.connect(cache_dir / parsecache.FILE) as db:
        kept = {row[0] for row in db.execute("SELECT key FROM parses")}
        indexes = {row[1] for row in db.execute("PRAGMA index_list(parses)")}
    assert kept == {"new1", "new2"}
    assert "parses_written" in indexes  # the prune reads by age without sorting the table


def test_a_first_validation_looks_nothing_up(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements: list[str] = []
    real = sqlite3.connect

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        db = real(*args, **kwargs)  # type: ignore[arg-type]
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(parsecache.sqlite3, "connect", traced)
    root = _workflow(tmp_path / "wf", _tools_md())
    first = _validate(root)
    assert not [s for s in statements if s.startswith("SELECT value")]  # an empty cache
    assert _rows(cache_dir) == 1
    statements.clear()
    _new_process()
    assert _validate(root) == first
    assert len([s for s in statements if s.startswith("SELECT value")]) == 1


@pytest.mark.parametrize(
    "changed",
    [{"metadata": {1: "a number key"}}, {"metadata": {"pair": (1, 2)}}],
    ids=["number key", "tuple"],
)
def test_a_value_json_reads_back_differently_is_not_stored(changed: dict[str, object]) -> None:
    tool = make_tool("lookup")
    assert parsecache._encode(([tool], []), []) is not None
    assert parsecache._encode(([replace(tool, **changed)], []), []) is None  # type: ignore[arg-type]
