"""Issue 31 point 5: what the workflow's code prints goes through redaction into the task's log,
never onto a ``--json`` stdout.

A pre_run hook and a python tool ``print()`` a secret value (an environment variable whose
name makes it secret) to stdout and stderr; ``folpipe run --json`` and ``folpipe test --json``
print exactly one JSON document on stdout, and the secret appears nowhere in the output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import SCRIPTED, write_workflow

SECRET = "ghp_printedsecret0123456789abcdef"

HOOK = """import os
import sys


def run(ctx, task):
    print("hook says", os.environ["GITHUB_PAT"])
    print("hook warns", os.environ["GITHUB_PAT"], file=sys.stderr)
    sys.stdout.write("partial line without newline ")
"""

TOOLS_MD = """## shout

Print something.

```python
import os
import sys


def shout(word: str) -> str:
    print("tool says", word, os.environ["GITHUB_PAT"])
    print("tool warns", file=sys.stderr)
    return "shouted"
```
"""


def _workflow(tmp_path: Path) -> Path:
    return write_workflow(
        tmp_path / "wf",
        {
            "task.yaml": {"name": "printing", "providers": SCRIPTED},
            "instructions.md": "Shout, then answer.",
            "hooks/pre_run.py": HOOK,
            "tools.md": TOOLS_MD,
            "replies.yaml": {
                "default": [{"tool_calls": [{"name": "shout", "arguments": {"word": "hi"}}]}, "ok"]
            },
            "tests.yaml": {
                "cases": [
                    {
                        "name": "prints",
                        "models": {
                            "default": [
                                {"tool_calls": [{"name": "shout", "arguments": {"word": "x"}}]},
                                "ok",
                            ]
                        },
                    }
                ]
            },
        },
    )


def _cli(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        capture_output=True,
        text=True,
        env={**env, "GITHUB_PAT": SECRET},
        timeout=240,
    )


@pytest.mark.parametrize("command", ["run", "test"])
def test_printing_code_leaves_json_stdout_one_document_and_no_secret(
    tmp_path: Path, cli_env: dict[str, str], command: str
) -> None:
    root = _workflow(tmp_path)
    proc = _cli(cli_env, command, root, "--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document: Any = json.loads(proc.stdout)  # exactly one document: nothing printed before it
    assert isinstance(document, dict)
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    assert "hook says" not in proc.stdout and "tool says" not in proc.stdout
    # ...it went to the task's log, redacted (stderr at WARNING: shown at this log level;
    # `folpipe test` keeps Prefect's run logs in the file it names on stderr)
    logs = proc.stderr
    if command == "test":
        logs = Path(proc.stderr.split("Prefect's run logs: ", 1)[1].split(" ", 1)[0]).read_text()
        assert SECRET not in logs
    assert "pre_run hook printed on stderr: hook warns [REDACTED]" in logs
    assert "tool shout printed on stderr: tool warns" in logs


def test_printed_lines_go_to_the_logger_masked_and_other_output_is_untouched(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio
    import logging
    import threading

    from prefect_folpipe.workflow.printed import printed_to

    monkeypatch.setenv("GITHUB_PAT", SECRET)
    records: list[tuple[int, str]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append((record.levelno, record.getMessage()))

    logger = logging.getLogger("test.printed")
    logger.addHandler(Collect())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    outside = threading.Event()
    inside = threading.Event()

    def other_code() -> None:  # runs at the same time, not under printed_to
        inside.wait(5)
        print("not captured")
        outside.set()

    async def hook() -> None:
        print("one", SECRET)
        inside.set()
        await asyncio.to_thread(lambda: print("from a worker thread", end=""))
        outside.wait(5)
        print("err", SECRET, file=sys.stderr)

    thread = threading.Thread(target=other_code)
    thread.start()
    with printed_to(logger, "pre_run hook"):
        asyncio.run(hook())
    thread.join()
    print("after")
    out = capsys.readouterr()
    assert out.out == "not captured\nafter\n" and SECRET not in out.err
    assert records == [
        (logging.INFO, "pre_run hook printed: one [REDACTED]"),
        (logging.WARNING, "pre_run hook printed on stderr: err [REDACTED]"),
        # the partial line, when the block ends
        (logging.INFO, "pre_run hook printed: from a worker thread"),
    ]
