"""SIGKILL a ``folpipe run`` process in the 12th model call of an agent loop, then resume it:
exactly one paid call is repeated, and the run ends as an uninterrupted one does.

Once through the Anthropic SDK against a local wire server (which counts the requests it is
paid for and keeps their bodies), once on the scripted provider whose last answer echoes the
whole conversation (so the final contexts can be compared).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import API_KEY, KEY_ENV, make_wire
from .wire import Reply, Stall

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]

FOLPIPE = str(Path(sys.executable).parent / "folpipe")
TOOLS_MD = """## lookup
Look a number up.

```python
def lookup(n: int) -> str:
    return f"value of {n} is {n * n}"
```
"""


def _start(root: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        return subprocess.Popen(
            [FOLPIPE, "run", str(root), "--json"], env=env, stdout=subprocess.DEVNULL,
            stderr=handle, start_new_session=True,
        )  # fmt: skip


def _run(root: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [FOLPIPE, "run", str(root), "--json"], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)


def _run_in_process(root: Path, env: dict[str, str]) -> dict[str, Any]:
    """``_run`` in this process (tests/inprocess.py): for the runs that are not the resume."""
    from inprocess import folpipe_in_process

    extra = {k: v for k, v in env.items() if os.environ.get(k) != v and k != "PREFECT_API_URL"}
    done = folpipe_in_process("run", str(root), "--json", api_url=env["PREFECT_API_URL"], env=extra)
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)


def _kill_when(process: subprocess.Popen[bytes], ready: Callable[[], bool], log: Path) -> None:
    """SIGKILL the process group once ``ready()``: the 12th call is in flight."""
    deadline = time.monotonic() + 240
    while not ready():
        assert process.poll() is None, f"the run ended early:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"never got there:\n{log.read_text()[-3000:]}"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def _journaled(root: Path) -> int:
    """How many answers the run's journal holds (each written whole: a temporary file renamed)."""
    journal = root / ".folpipe" / "results" / "journal"
    return len(list(journal.rglob("*.json"))) if journal.is_dir() else 0


def _agent(root: Path, task_yaml: str, replies: dict[str, Any] | None = None) -> Path:
    (root / "subtasks" / "agent").mkdir(parents=True)
    (root / "task.yaml").write_text(task_yaml)
    (root / "subtasks/agent/instructions.md").write_text("Look numbers 0-10 up, then answer.\n")
    (root / "subtasks/agent/tools.md").write_text(TOOLS_MD)
    if replies is not None:
        (root / "replies.yaml").write_text(yaml.safe_dump(replies))
    return root


ANTHROPIC = """name: killed
providers:
  default: claude
  claude: {{type: anthropic, model: claude-sonnet-4-5, base_url: "{url}", api_key_env: {env}}}
settings: {{max_retries: 0}}
"""


def test_sigkill_in_call_12_repeats_one_paid_call(tmp_path: Path, cli_env, http) -> None:  # type: ignore[no-untyped-def]
    wire = make_wire("anthropic", http)
    for n in range(11):
        wire.add(Reply(tool_calls=[(f"toolu_{n:02d}", "lookup", {"n": n})], usage=(900, 30, 0, 0)))
    wire.add(Stall(6), Reply(text="The squares are known.", usage=(1500, 8, 1400, 0)))
    root = _agent(tmp_path / "wf", ANTHROPIC.format(url=wire.base_url, env=KEY_ENV))
    env = {**cli_env, KEY_ENV: API_KEY}
    log = tmp_path / "killed.log"

    def in_call_12() -> bool:
        return len(wire.requests) == 12 and _journaled(root) == 11

    _kill_when(_start(root, env, log), in_call_12, log)

    resumed = _run(root, env)
    assert resumed["status"] == "completed"
    assert len(wire.requests) == 13, "exactly one paid call was repeated"
    assert wire.requests[12] == wire.requests[11], "the repeated call sent the same conversation"
    agent = next(row for row in resumed["tasks"] if row["path"] == "agent")
    assert (agent["model_calls"], agent["replayed_calls"]) == (1, 11)
    assert agent["usage"] == {"input_tokens": 1500 + 1400, "output_tokens": 8}  # the paid call
    assert resumed["usage"]["replayed_calls"] == 11
    assert resumed["context"]["agent"] == "The squares are known."
    journal = root / ".folpipe" / "results" / "journal"
    assert API_KEY not in "".join(p.read_text() for p in journal.rglob("*.json"))

    (root / "subtasks/agent/instructions.md").write_text("Look numbers 0-10 up, then sum up.\n")
    for n in range(11):
        wire.add(Reply(tool_calls=[(f"toolu_b{n:02d}", "lookup", {"n": n})]))
    wire.add(Reply(text="Summed."))
    edited = _run_in_process(root, env)
    agent = next(row for row in edited["tasks"] if row["path"] == "agent")
    assert (agent["model_calls"], agent["replayed_calls"]) == (12, 0), "an edit replays nothing"
    assert len(wire.requests) == 25


# How long a scripted call stays in flight to be killed in: 20 times the kill's poll interval, and
# paid again by the resumed (and the reference) run, so no longer than that.
IN_FLIGHT_S = 1.0
SCRIPTED = "name: killed\nproviders: {default: scripted, scripted: {replies: replies.yaml}}\n"


def _scripted_replies(delay: float) -> dict[str, Any]:
    calls: list[Any] = [
        {"tool_calls": [{"name": "lookup", "arguments": {"n": n}}]} for n in range(11)
    ]
    return {"tasks": {"agent": [*calls, {"echo": True, "delay": delay}]}}


def test_a_resumed_run_ends_as_an_uninterrupted_one(tmp_path: Path, cli_env) -> None:  # type: ignore[no-untyped-def]
    root = _agent(tmp_path / "wf", SCRIPTED, _scripted_replies(IN_FLIGHT_S))
    reference = tmp_path / "reference"
    shutil.copytree(root, reference)
    journal = root / ".folpipe" / "results" / "journal"

    def eleven_answers() -> bool:
        return journal.is_dir() and len(list(journal.rglob("*.json"))) == 11

    log = tmp_path / "killed.log"
    _kill_when(_start(root, cli_env, log), eleven_answers, log)
    resumed = _run(root, cli_env)
    uninterrupted = _run_in_process(reference, cli_env)
    assert resumed["status"] == uninterrupted["status"] == "completed"
    agent = next(row for row in resumed["tasks"] if row["path"] == "agent")
    assert (agent["model_calls"], agent["replayed_calls"]) == (1, 11)
    # the echo is the whole conversation the model saw: prompt, tool calls, tool results
    echoed = resumed["context"]["agent"]
    assert echoed.count("value of") == 11
    assert echoed.replace(str(root.resolve()), "<wf>") == uninterrupted["context"]["agent"].replace(
        str(reference.resolve()), "<wf>"
    )
