"""Loading reads every file of the workflow once, and a tools.md whose stat is unchanged is not
parsed again in the same process (issue 15 point 1)."""

from __future__ import annotations

import builtins
import io
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.loader.tools import _toolsmd as toolsmd
from prefect_folpipe.validate import load_workflow
from tests.builders import write_files

TOOL = """## lookup
> type: python

Look things up.

```python
def lookup(query: str, limit: int = 3) -> dict:
    return {"query": query}
```
"""


def _workflow(root: Path) -> Path:
    files: dict[str, str] = {
        "task.yaml": "name: reads\nproviders:\n  default: scripted\n  scripted: {}\n",
        "shared/instructions/style.md": "Be brief.\n",
        "shared/tools.md": TOOL.replace("lookup", "shared_lookup"),
    }
    for index in range(4):
        leaf = f"subtasks/{index:02d}_leaf{index}"
        files[f"{leaf}/task.yaml"] = "output:\n  answer: str\n"
        files[f"{leaf}/instructions.md"] = 'Answer.\n{% include "style" %}\n'
        files[f"{leaf}/tools.md"] = TOOL.replace("lookup", f"lookup_{index}")
    write_files(root, files)
    return root


@pytest.fixture
def opened(monkeypatch) -> Counter[str]:
    """Every file opened for reading (by ``open``, or by ``os.open`` without a write flag),
    by resolved path."""
    counts: Counter[str] = Counter()
    real = io.open

    def counting(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and "r" in mode:
            counts[os.path.realpath(file)] += 1
        return real(file, mode, *args, **kwargs)

    real_os_open = os.open

    def counting_os_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> Any:
        if not flags & (os.O_WRONLY | os.O_RDWR):  # read_regular's opens
            counts[os.path.realpath(file)] += 1
        return real_os_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(os, "open", counting_os_open)
    return counts


def test_each_file_is_read_once(tmp_path, opened) -> None:
    root = _workflow(tmp_path / "wf")
    workflow = load_workflow(root)
    assert len(workflow.tasks()) == 5
    mine = {path: n for path, n in opened.items() if path.startswith(str(root.resolve()))}
    assert any(path.endswith("tools.md") for path in mine)
    assert any(path.endswith("style.md") for path in mine)
    assert {path: n for path, n in mine.items() if n > 1} == {}


def test_an_unchanged_tools_md_is_not_parsed_again(tmp_path, monkeypatch) -> None:
    root = _workflow(tmp_path / "wf")
    parsed: list[str] = []
    real = toolsmd._parse_text

    def counting(text: str, file: Path, *args: Any) -> Any:
        parsed.append(file.parent.name)
        return real(text, file, *args)

    monkeypatch.setattr(toolsmd, "_parse_text", counting)
    first = load_workflow(root)
    # four leaves and shared/: read without running (the vetting), then imported
    assert sorted(set(parsed)) == ["00_leaf0", "01_leaf1", "02_leaf2", "03_leaf3", "shared"]
    assert len(parsed) == 10
    parsed.clear()
    again = load_workflow(root)
    assert parsed == []
    assert [t.content_hash for t in again.tasks()] == [t.content_hash for t in first.tasks()]
    assert [t.tools for t in again.tasks()] == [t.tools for t in first.tasks()]

    # the same size, a new body: the stat changed, so it is parsed again
    edited = root / "subtasks/02_leaf2/tools.md"
    edited.write_text(edited.read_text().replace("limit: int = 3", "limit: int = 7"))
    third = load_workflow(root)
    assert parsed == ["02_leaf2", "02_leaf2"]
    before = {t.path: t for t in first.tasks()}
    changed = [t.path for t in third.tasks() if t.content_hash != before[t.path].content_hash]
    assert changed == ["leaf2"]
    (tool,) = next(t for t in third.tasks() if t.path == "leaf2").own_tools
    assert tool.parameters["properties"]["limit"]["default"] == 7


def test_a_cached_parse_keeps_its_diagnostics(tmp_path) -> None:
    root = _workflow(tmp_path / "wf")
    (root / "subtasks/01_leaf1/tools.md").write_text("## bad name!\n> type: python\n")
    from prefect_folpipe.validate import validate_workflow

    first = [d.code for d in validate_workflow(root)]
    second = [d.code for d in validate_workflow(root)]
    assert "FP203" in first
    assert second == first


def test_an_unchanged_task_yaml_is_not_parsed_again(tmp_path, monkeypatch) -> None:
    """A task.yaml's parse is a function of its text: the same text is parsed once per
    process, its diagnostics are reported by every load, and an edit is parsed again."""
    from prefect_folpipe.loader import _files
    from prefect_folpipe.validate import validate_workflow

    root = _workflow(tmp_path / "wf")
    bad = root / "subtasks/03_leaf3/task.yaml"
    bad.write_text("output:\n  answer: str\nsettings: {max_retries: many}\nunknown_key: 1\n")
    parsed: list[str] = []
    real = _files.parse_yaml

    def counting(text: str, file: str, **kwargs: Any) -> Any:
        parsed.append(file)
        return real(text, file, **kwargs)

    monkeypatch.setattr(_files, "parse_yaml", counting)
    monkeypatch.setattr(_files, "_PARSED", {})  # other tests parsed these same texts
    first = [(d.code, d.file, d.line, d.task) for d in validate_workflow(root)]
    assert len(parsed) == 5 and first
    parsed.clear()
    assert [(d.code, d.file, d.line, d.task) for d in validate_workflow(root)] == first
    assert parsed == []

    bad.write_text("output:\n  answer: str\n")
    assert validate_workflow(root) == []
    assert parsed == ["subtasks/03_leaf3/task.yaml"]


def test_validate_reads_no_data_file_a_run_would_hash(tmp_path, opened) -> None:
    """``folpipe validate`` (and ``validate_workflow``) check nothing a content hash says, so
    they do not read a task's data files; a run's load hashes them (its checkpoints key on
    them). The diagnostics are the same either way."""
    from click.testing import CliRunner

    from prefect_folpipe.cli import cli
    from prefect_folpipe.validate import check, validate_workflow

    root = _workflow(tmp_path / "wf")
    data = root / "subtasks/01_leaf1/input/big.csv"
    data.parent.mkdir()
    data.write_text("a,b\n1,2\n")
    (root / "subtasks/02_leaf2/tools.md").write_text("## bad name!\n> type: python\n")
    key = os.path.realpath(data)

    result = CliRunner().invoke(cli, ["validate", str(root), "--json"])
    assert result.exit_code == 1 and '"FP203"' in result.output
    assert validate_workflow(root)
    assert opened[key] == 0

    hashed, with_hashes = check(root, import_tools=False)
    bare, without = check(root, import_tools=False, content_hashes=False)
    assert opened[key] == 1
    assert without == with_hashes
    assert hashed.workflow is not None and bare.workflow is not None
    assert all(task.content_hash for task in hashed.workflow.tasks())
    assert {task.content_hash for task in bare.workflow.tasks()} == {""}


def test_the_imported_build_keeps_what_one_build_gives(tmp_path) -> None:
    """A run's second build (tools imported) takes each task's instructions, settings,
    prompt and provider from the first build of the same load: the tree and the diagnostics
    are those of a single build that imports the tools."""
    from prefect_folpipe.loader import load, load_vetted

    root = _workflow(tmp_path / "wf")
    single = load(root, import_tools=True)
    vetted, diagnostics = load_vetted(root, lambda _result: [])
    assert single.workflow is not None and vetted.workflow is not None
    assert [d.code for d in diagnostics] == [d.code for d in single.diagnostics]
    by_path = {t.path: t for t in vetted.workflow.tasks()}
    for task in single.workflow.tasks():
        twin = by_path[task.path]
        assert twin.instructions == task.instructions
        assert task.path == "" or "Be brief." in (task.instructions or "")
        assert (twin.system_prompt, twin.settings, twin.provider, twin.content_hash) == (
            task.system_prompt,
            task.settings,
            task.provider,
            task.content_hash,
        )
        assert [t.content_hash for t in twin.tools] == [t.content_hash for t in task.tools]


def test_a_load_lists_each_folder_and_stats_each_tools_md_once(tmp_path, monkeypatch) -> None:
    """A run's load builds the tree twice (vetted, then imported) over one listing of each
    task folder: the content hashes reuse the discovery's listing, and the second build
    takes a tools.md whose bytes this load read already without a stat of its own."""
    from prefect_folpipe.loader import _discover, _hash

    root = _workflow(tmp_path / "wf")
    listed: Counter[str] = Counter()
    stats: Counter[str] = Counter()
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path: Any = ".") -> Any:
        listed[os.path.realpath(path)] += 1
        return real_scandir(path)

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("tools.md"):
            stats[os.path.realpath(path)] += 1
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(_discover.os, "scandir", scandir)
    monkeypatch.setattr(_hash.os, "scandir", scandir)
    monkeypatch.setattr(toolsmd.os, "stat", stat)
    first = load_workflow(root)
    folders = {os.path.realpath(task.folder) for task in first.tasks()}
    assert {path: listed[path] for path in folders} == dict.fromkeys(folders, 1)
    leaves = {path: n for path, n in stats.items() if "/subtasks/" in path}
    assert len(leaves) == 4 and set(leaves.values()) == {1}  # shared/'s is looked for too
    fresh = {t.path: _hash.file_digests(t.folder, root=not t.path) for t in first.tasks()}
    assert {t.path: t.file_digests for t in first.tasks()} == fresh


def test_a_tools_md_link_is_read_and_a_tools_md_folder_is_not(tmp_path) -> None:
    """Whether a task has a tools.md comes from its folder's listing: a symlink to a file
    counts (its target is read), a folder named tools.md does not."""
    root = _workflow(tmp_path / "wf")
    leaf0, leaf1 = root / "subtasks/00_leaf0", root / "subtasks/01_leaf1"
    (tmp_path / "kept.md").write_text(TOOL.replace("lookup", "linked"))
    (leaf0 / "tools.md").unlink()
    (leaf0 / "tools.md").symlink_to(tmp_path / "kept.md")
    (leaf1 / "tools.md").unlink()
    (leaf1 / "tools.md").mkdir()
    by_path = {task.path: task for task in load_workflow(root).tasks()}
    assert [tool.name for tool in by_path["leaf0"].own_tools] == ["linked"]
    assert by_path["leaf1"].own_tools == ()
