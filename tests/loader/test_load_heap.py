"""Loading runs no garbage-collection pass, leaves what it built in the oldest generation
(not rescanned by the next young pass), makes no cyclic garbage, and never thaws objects
someone else froze; a literal in tool code reads as ``ast.literal_eval`` reads it, without
its garbage (issue 15 point 1)."""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_folpipe.loader import load
from prefect_folpipe.loader.tools import _toolsmd as toolsmd
from prefect_folpipe.loader.tools._static import _literal_value
from tests.builders import write_files

TOOL = """## lookup
> type: python

Look things up.

```python
@tool(name="lookup", description="Look things up.")
def lookup(query: str, limit: int = 3, mode: str = "fast", tags: list = []) -> dict:
    return {"query": query}
```
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    files = {"task.yaml": "name: heap\nproviders:\n  default: scripted\n  scripted: {}\n"}
    for index in range(6):
        files[f"subtasks/{index:02d}_leaf{index}/instructions.md"] = "Answer.\n"
        files[f"subtasks/{index:02d}_leaf{index}/tools.md"] = TOOL.replace("lookup", f"look{index}")
    write_files(tmp_path, files)
    return tmp_path


@pytest.fixture(autouse=True)
def _collector_as_found():  # type: ignore[no-untyped-def]
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.unfreeze()
    toolsmd._PARSED.clear()  # every tools.md parsed afresh
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def _in_generation(generation: int, target: object) -> bool:
    return any(obj is target for obj in gc.get_objects(generation=generation))


def test_what_a_load_built_is_out_of_the_young_generation(folder: Path) -> None:
    gc.enable()
    gc.set_threshold(10**9)  # no young pass moves anything on its own meanwhile
    result = load(folder, import_tools=False)
    assert result.workflow is not None and not result.diagnostics
    assert gc.isenabled()
    assert gc.get_count()[0] < 50  # not ~the whole tree waiting for the next young pass
    built = result.workflow.root.children[0].tools[0].parameters
    assert gc.is_tracked(built) and not _in_generation(0, built)  # for no young pass


NO_CYCLIC_GARBAGE = """
import gc, shutil, sys
from pathlib import Path
from prefect_folpipe.loader import load
folder, warm_up = Path(sys.argv[1]), Path(sys.argv[2])
shutil.copytree(folder, warm_up)  # the same files elsewhere: no reading of them is reused
load(warm_up, import_tools=False)  # first imports make garbage of their own
gc.collect()
gc.disable()
load(folder, import_tools=False)  # static reading: decorator options and defaults
print(gc.collect())
"""


def test_a_load_makes_no_cyclic_garbage(folder: Path) -> None:
    """In a process of its own: no other thread (a Prefect client's, left by an earlier test)
    makes garbage meanwhile."""
    done = subprocess.run(
        [sys.executable, "-c", NO_CYCLIC_GARBAGE, folder, folder.with_name(f"{folder.name}-warm")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) == 0


def test_objects_someone_froze_stay_frozen(folder: Path) -> None:
    """What the load built stays young: it was not moved by a freeze and thaw of our own. No
    young pass may run on its own meanwhile (another thread's allocations can start one)."""
    gc.enable()
    gc.set_threshold(10**9)
    before = {"held": "by a pre-fork server"}
    gc.freeze()
    result = load(folder, import_tools=False)
    assert gc.get_freeze_count()
    assert not any(obj is before for obj in gc.get_objects())  # still frozen
    assert result.workflow is not None and _in_generation(0, result.workflow.root)


def test_a_caller_that_disabled_the_collector_keeps_it_disabled(folder: Path) -> None:
    gc.disable()
    load(folder, import_tools=False)
    assert not gc.isenabled()


@pytest.mark.parametrize(
    "source",
    ["3", "-1.5", "'text'", "None", "...", "[1, (2, 'a'), {3}]", "{'a': [1, {'b': ()}]}",
     "()", "1+2j", "{**other}", "[*rest]", "{[1]: 2}", "{[1]}", "name", "f(x)"],
)  # fmt: skip
def test_a_literal_reads_as_literal_eval_reads_it(source: str) -> None:
    node = ast.parse(source, mode="eval").body

    def read(reader):  # type: ignore[no-untyped-def]
        try:
            return reader(node)
        except (ValueError, TypeError) as exc:
            return type(exc)

    assert read(_literal_value) == read(ast.literal_eval)
