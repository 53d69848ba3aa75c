"""The docs' runnable commands run: every fenced block of README.md and docs/*.md whose info
string is ``bash runnable`` is run with bash, offline, in a scratch copy of ``examples/`` and
``deployments/`` (so their ``.folpipe/`` and written files stay out of the repository), against
the session's Prefect server. A block passes when it exits 0 without a traceback.

Mark a block runnable only when it needs nothing but this repository and a Prefect API:
`````markdown
```bash runnable
folpipe validate examples/research_report
```
`````
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
MARKER = "runnable"


def runnable_blocks() -> list[tuple[str, str]]:
    """``(file:line, commands)`` of every block marked ``bash runnable``."""
    blocks = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            words = match["info"].split()
            if words[:1] == ["bash"] and MARKER in words[1:]:
                line = text.count("\n", 0, match.start()) + 1
                blocks.append((f"{document.relative_to(REPO)}:{line}", match["body"]))
    return blocks


BLOCKS = runnable_blocks()


def test_the_docs_mark_their_runnable_commands() -> None:
    files = {where.split(":")[0] for where, _ in BLOCKS}
    assert {"README.md", "docs/running.md", "docs/deploy.md"} <= files, files


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A copy of what the commands read, outside the repository (one per block)."""
    root = tmp_path
    for folder in ("examples", "deployments"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns(".folpipe"))
    return root


@pytest.mark.prefect
@pytest.mark.parametrize(("where", "commands"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_runnable_block_runs(where: str, commands: str, scratch: Path, cli_env: dict) -> None:
    env = {**cli_env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{cli_env['PATH']}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{where} failed:\n{commands}\n---\n{output[-4000:]}"
    assert "Traceback" not in output, f"{where}:\n{output[-4000:]}"
