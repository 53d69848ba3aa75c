"""What ``folpipe run`` prints on stderr: every log line carries Prefect's prefix, also the
later lines of a task's coalesced INFO entry (``tool today ok in ...``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PREFIXED = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| (INFO|WARNING|ERROR|DEBUG)\s* \| ")
TOOLS_MD = """## today
> type: python

Today's date.

```python
def today() -> str:
    return "2026-12-04"
```
"""


def tool_workflow(root: Path) -> Path:
    files = {
        "task.yaml": {"name": "lines", "providers": {"default": "scripted"}},
        "replies.yaml": {
            "tasks": {
                "a": [
                    {"tool_calls": [{"name": "today", "arguments": {}}] * 2},
                    "done",
                ]
            }
        },
        "subtasks/a/instructions.md": "Use the tool.",
        "subtasks/a/tools.md": TOOLS_MD,
    }
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return root


@pytest.mark.prefect
def test_every_log_line_on_the_terminal_has_its_prefix(cli_env, tmp_path):
    folder = tool_workflow(tmp_path / "wf")
    env = {**cli_env, "PREFECT_LOGGING_LEVEL": "INFO"}
    args = ["run", str(folder), "--json", "--replies", str(folder / "replies.yaml")]
    done = subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    tools = [line for line in lines if "tool today ok in" in line]
    assert len(tools) == 2, done.stderr
    bare = [line for line in lines if not PREFIXED.match(line)]
    assert bare == [], done.stderr
