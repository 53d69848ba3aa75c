"""Issue 11 points 16 and 17: the workflow's tool code.

17: ``folpipe validate`` is safe on an untrusted folder: it reads tools.md code blocks and
``tools/*.py`` from their source (signatures, ``@tool`` arguments, imports) and never runs
them; ``--import-tools`` runs them as ``folpipe run`` does, and then the model gets the real
function's schema.

16: code that ends the process when loaded (``raise SystemExit(0)``, ``os._exit(0)``) is a
coded error in ``validate``, ``tree`` and ``run --json``, never a silent exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow

from prefect_folpipe.validate import load_workflow, validate_workflow


def _side_effect_workflow(root: Path, marker: Path) -> Path:
    block = (
        "## touch_md\n\nTouch.\n\n```python\n"
        f"open({str(marker) + '.md'!r}, 'w').write('ran')\n\n"
        "def touch_md(level: int = 1) -> str:\n    return 'x'\n```\n"
    )
    module = (
        "from prefect_folpipe import tool\n"
        f"open({str(marker) + '.py'!r}, 'w').write('ran')\n\n"
        "@tool(name='touch_py', retries=2)\n"
        "def touch(query: str) -> str:\n    return query\n"
    )
    return write_workflow(
        root, {"instructions.md": "x", "tools.md": block, "tools/touch.py": module}
    )


def test_validate_never_runs_tool_code(tmp_path: Path, folpipe_offline: Any) -> None:
    marker = tmp_path / "ran"
    root = _side_effect_workflow(tmp_path / "wf", marker)
    for args in (["validate", root], ["validate", root, "--json"], ["tree", root, "--json"]):
        proc = folpipe_offline(*args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert validate_workflow(root) == []
    assert not Path(f"{marker}.md").exists()
    assert not Path(f"{marker}.py").exists()
    tree = json.loads(folpipe_offline("tree", root, "--json").stdout)
    assert sorted(tree["tools"]) == ["touch_md", "touch_py"]


def test_import_tools_runs_it_as_a_run_does(tmp_path: Path, folpipe_offline: Any) -> None:
    marker = tmp_path / "ran"
    root = _side_effect_workflow(tmp_path / "wf", marker)
    proc = folpipe_offline("validate", root, "--import-tools")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert Path(f"{marker}.md").exists() and Path(f"{marker}.py").exists()


SCHEMA_MODULE = '''from enum import Enum
from typing import Literal, Optional

from prefect_folpipe import ToolContext, tool


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@tool(name="paint", description="Paint a wall.", timeout=5, scope="local")
def paint(ctx: ToolContext, wall: str, colour: Colour, coats: int = 2,
          finish: Literal["matt", "gloss"] = "matt", note: Optional[str] = None) -> str:
    """Ignored: the decorator gives the description.

    Args:
        wall: Which wall.
        coats: How many coats.
    """
    return wall
'''


def test_the_source_gives_the_schema_and_a_run_refines_it(tmp_path: Path) -> None:
    root = write_workflow(
        tmp_path / "wf", {"instructions.md": "x", "tools/paint.py": SCHEMA_MODULE}
    )
    static = load_workflow(root, import_tools=False).root.tools[0]
    run = load_workflow(root).root.tools[0]
    assert (static.name, static.description) == ("paint", "Paint a wall.")
    assert static.metadata["timeout"] == 5 and static.scope == "local"
    properties = static.parameters["properties"]
    assert properties["wall"] == {"type": "string", "description": "Which wall."}
    assert properties["coats"]["default"] == 2
    assert properties["finish"]["enum"] == ["matt", "gloss"]
    assert static.parameters["required"] == ["wall", "colour"]
    assert "enum" not in json.dumps(properties["colour"])  # any value: Colour is not imported
    refined = json.dumps(run.parameters)
    assert '"red"' in refined and '"blue"' in refined  # what the model is sent in a run


@pytest.mark.parametrize(
    "problem, code, line",
    [
        ("import definitely_missing_pkg_xyz", "FP219", 6),
        ("def t(*args: int) -> None: ...", "FP216", 6),
        ("def t(x: int) -> int:\n    return x +", "FP210", 7),
    ],
)
def test_static_reading_still_finds_the_mistakes(
    tmp_path: Path, problem: str, code: str, line: int
) -> None:
    text = f"## t\n\nA tool.\n\n```python\n{problem}\n```\n"
    root = write_workflow(tmp_path / "wf", {"instructions.md": "x", "tools.md": text})
    found = [(d.code, d.line) for d in validate_workflow(root) if d.severity.value == "error"]
    assert found == [(code, line)]


EXITS = ["raise SystemExit(0)", "import os\nos._exit(0)", "import sys\nsys.exit(0)"]


def _exiting_block(statement: str) -> str:
    return f"## t\n\nA tool.\n\n```python\n{statement}\n\ndef t() -> str:\n    return 'x'\n```\n"


@pytest.mark.parametrize("statement", EXITS)
@pytest.mark.parametrize("import_tools", [False, True])
def test_exit_in_a_code_block_is_coded_in_validate(
    tmp_path: Path, folpipe_offline: Any, statement: str, import_tools: bool
) -> None:
    root = write_workflow(
        tmp_path / "wf", {"instructions.md": "x", "tools.md": _exiting_block(statement)}
    )
    args = ["validate", root, "--json", *(["--import-tools"] if import_tools else [])]
    proc = folpipe_offline(*args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    assert [e["code"] for e in document["errors"]] == ["FP219"]
    assert "SystemExit" in document["errors"][0]["message"]


@pytest.mark.parametrize("statement", EXITS)
def test_exit_in_a_tools_module_is_coded(tmp_path: Path, statement: str) -> None:
    module = (
        f"from prefect_folpipe import tool\n{statement}\n\n@tool\ndef t() -> str:\n    return 'x'\n"
    )
    root = write_workflow(tmp_path / "wf", {"instructions.md": "x", "tools/t.py": module})
    for import_tools in (False, True):
        codes = [d.code for d in validate_workflow(root, import_tools=import_tools)]
        assert codes == ["FP214"]


@pytest.mark.parametrize("statement", ["raise SystemExit(0)", "import os\nos._exit(0)"])
def test_tree_exits_1_with_a_code(tmp_path: Path, folpipe_offline: Any, statement: str) -> None:
    root = write_workflow(
        tmp_path / "wf", {"instructions.md": "x", "tools.md": _exiting_block(statement)}
    )
    proc = folpipe_offline("tree", root, "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FP219" in proc.stdout


@pytest.mark.prefect
@pytest.mark.parametrize("statement", ["raise SystemExit(0)", "import os\nos._exit(0)"])
def test_run_json_exits_2_with_a_code(tmp_path: Path, folpipe: Any, statement: str) -> None:
    root = write_workflow(
        tmp_path / "wf", {"instructions.md": "x", "tools.md": _exiting_block(statement)}
    )
    proc = folpipe("run", root, "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "FP219" in proc.stdout
