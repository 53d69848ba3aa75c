"""A killed ``--from`` run, resumed, pays again only for the call that was in flight (issue 31
point 8): ``folpipe resume`` takes the ``--from`` tasks and what keyed their re-run passes from
the run record, so the resumed run asks the same tasks again and replays what the killed run's
re-run passes had already paid for; the tasks before them still come from their checkpoints.

A workflow of 9 model calls through the Anthropic SDK against a local wire server that keeps
every request body: run once, then ``--from agent`` (7 calls), SIGKILLed in its 5th call.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import API_KEY, KEY_ENV, make_wire
from .test_journal_resume import FOLPIPE, TOOLS_MD, _kill_when, _run_in_process
from .wire import Reply, Stall

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]

WORKFLOW = """name: rerun-killed
subtasks: {{execution_type: sequential}}
providers:
  default: claude
  claude: {{type: anthropic, model: claude-sonnet-4-5, base_url: "{url}", api_key_env: {env}}}
settings: {{max_retries: 0}}
"""


def _workflow(root: Path, url: str) -> Path:
    for folder, text in (("10_first", "Say one."), ("20_second", "Say two."), ("30_agent", "")):
        (root / "subtasks" / folder).mkdir(parents=True)
        (root / "subtasks" / folder / "instructions.md").write_text(text or "Look numbers up.\n")
    (root / "subtasks/30_agent/tools.md").write_text(TOOLS_MD)
    (root / "task.yaml").write_text(WORKFLOW.format(url=url, env=KEY_ENV))
    return root


def _lookups(start: int, count: int) -> list[Reply]:
    return [
        Reply(tool_calls=[(f"toolu_{n:03d}", "lookup", {"n": n})])
        for n in range(start, start + count)
    ]


def _folpipe(*args: str | Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [FOLPIPE, *map(str, args), "--json"], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)


def _rows(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["path"]: row for row in document["tasks"] if row["path"]}


def test_a_killed_from_run_resumed_pays_again_for_at_most_one_call(
    tmp_path: Path, cli_env: dict[str, str], http: Any
) -> None:
    wire = make_wire("anthropic", http)
    env = {**cli_env, KEY_ENV: API_KEY}
    root = _workflow(tmp_path / "wf", wire.base_url)
    wire.add(Reply(text="one"), Reply(text="two"), *_lookups(0, 6), Reply(text="first answer"))
    first = _run_in_process(root, env)
    assert first["status"] == "completed" and len(wire.requests) == 9

    # the re-run asks other questions, so a repeated request is one paid for twice
    wire.add(*_lookups(100, 4), Stall(8), *_lookups(104, 2), Reply(text="second answer"))
    journal = root / ".folpipe" / "results" / "journal"
    before = set(journal.rglob("*.json"))

    def in_its_fifth_call() -> bool:
        return len(wire.requests) == 9 + 5 and len(set(journal.rglob("*.json")) - before) == 4

    log = tmp_path / "killed.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [FOLPIPE, "run", str(root), "--from", "agent", "--json"], env=env,
            stdout=subprocess.DEVNULL, stderr=handle, start_new_session=True,
        )  # fmt: skip
    _kill_when(process, in_its_fifth_call, log)

    resumed = _folpipe("resume", root, env=env)
    assert resumed["status"] == "completed", resumed.get("error")
    rerun = [json.dumps(body, sort_keys=True) for body in wire.requests[9:]]
    repeated = len(rerun) - len(set(rerun))
    assert repeated <= 1 and len(wire.requests) == 9 + 5 + 3, [len(rerun), repeated]
    assert wire.requests[14] == wire.requests[13], "the call in flight was the one repeated"
    rows = _rows(resumed)
    assert (rows["agent"]["replayed_calls"], rows["agent"]["model_calls"]) == (4, 3)
    assert resumed["context"]["agent"] == "second answer", "the re-run's answer, not the first"
    for path in ("first", "second"):  # not under --from: still restored
        assert rows[path]["status"] == "cached" and rows[path]["model_calls"] == 0
    assert resumed["context"]["first"] == "one" and resumed["context"]["second"] == "two"
