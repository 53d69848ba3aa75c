"""The docs' runnable commands run, in any order: every fenced block of README.md, docs/*.md,
examples/README.md and deployments/README.md whose info string is ``bash runnable`` is run
with bash, offline, against the session's Prefect server, each in a **fresh copy** of
``examples/`` and ``deployments/`` (so no block sees what another wrote, and their
``.folpipe/`` and written files stay out of the repository). A block passes when it exits 0
without a traceback and leaves the repository's own folders untouched.

The blocks run in a **shuffled order**: the seed is derived from the blocks' text (the same in
every pytest-xdist worker, so they collect the same tests) and is part of each test id
(``seed4711-03-README.md:123``); ``FOLPIPE_DOCS_SEED=N`` replays another order.

Mark a block runnable only when it needs nothing but this repository and a Prefect API:
`````markdown
```bash runnable
folpipe validate examples/research_report
```
`````
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
DOCUMENTS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "examples" / "README.md",
    REPO / "deployments" / "README.md",
]
COPIED = ("examples", "deployments")
"""What a block may use, copied afresh for each block (its paths are relative to the copy)."""
FENCE = re.compile(
    r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
MARKER = "runnable"


def runnable_blocks() -> list[tuple[str, str]]:
    """``(file:line, commands)`` of every block marked ``bash runnable``, in document order."""
    blocks = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            words = match["info"].split()
            if words[:1] == ["bash"] and MARKER in words[1:]:
                line = text.count("\n", 0, match.start()) + 1
                blocks.append((f"{document.relative_to(REPO)}:{line}", match["body"]))
    return blocks


def order_seed(blocks: list[tuple[str, str]]) -> int:
    """``FOLPIPE_DOCS_SEED``, else a number derived from the blocks' text: one order per
    version of the docs, the same in every worker and every session."""
    given = os.environ.get("FOLPIPE_DOCS_SEED", "").strip()
    if given:
        return int(given)
    return zlib.crc32("\0".join(body for _, body in blocks).encode()) % 10_000


IN_ORDER = runnable_blocks()
SEED = order_seed(IN_ORDER)
BLOCKS = random.Random(SEED).sample(IN_ORDER, k=len(IN_ORDER))
IDS = [f"seed{SEED}-{i:02d}-{where}" for i, (where, _) in enumerate(BLOCKS)]


def test_the_docs_mark_their_runnable_commands() -> None:
    files = {where.split(":")[0] for where, _ in BLOCKS}
    assert {
        "README.md",
        "docs/running.md",
        "docs/deploy.md",
        "docs/testing.md",
        "examples/README.md",
    } <= files, files


def test_the_blocks_run_shuffled_and_reproducibly() -> None:
    assert sorted(BLOCKS) == sorted(IN_ORDER)
    again = random.Random(SEED).sample(IN_ORDER, k=len(IN_ORDER))
    assert again == BLOCKS, "the same seed gives the same order"
    orders = {tuple(random.Random(seed).sample(IN_ORDER, k=len(IN_ORDER))) for seed in range(8)}
    assert len(orders) > 1, "the seed decides the order"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A fresh copy of what the commands read, outside the repository (one per block)."""
    for folder in COPIED:
        shutil.copytree(
            REPO / folder,
            tmp_path / folder,
            ignore=shutil.ignore_patterns(".folpipe", "__pycache__", "prefect.yaml", "flow.py")
            if folder == "examples"
            else shutil.ignore_patterns(".folpipe", "__pycache__"),
        )
    return tmp_path


def repository_state() -> str | None:
    """``git status`` of the folders the blocks use (None outside a git checkout)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    done = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", *COPIED],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


@pytest.mark.prefect
@pytest.mark.parametrize(("where", "commands"), BLOCKS, ids=IDS)
def test_a_runnable_block_runs(where: str, commands: str, scratch: Path, cli_env: dict) -> None:
    env = {**cli_env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{cli_env['PATH']}"}
    before = repository_state()
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
    assert repository_state() == before, f"{where} wrote into the repository's own folders"


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """``.ci/run`` ends with the README's second command, the one that installs the test
    dependencies (Arize Phoenix in ``.venv-phoenix`` too) and runs the whole suite."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = readme.split("\n## ", 2)[1]
    assert first.startswith("The two commands"), first[:80]
    [command] = [
        match["body"].strip()
        for match in FENCE.finditer(first)
        if match["info"].strip() == "bash" and " pytest " in match["body"]
    ]
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    code = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert code[-1] == command
    assert ".venv-phoenix/bin/pip install" in command
    assert "export FOLPIPE_REQUIRE_PHOENIX=1" in code
