"""The model-call journal on real Prefect runs: retries and resumes answer what was already
paid for from the result store, budgets and reports know it, and it grows linearly.

The SIGKILL resume of a ``folpipe run`` process is in tests/cli/test_journal_resume.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.options import RunOptions

pytestmark = pytest.mark.prefect

TOOLS_MD = """## lookup
> replay: {replay}

Look a number up.

```python
def lookup(n: int) -> str:
    import os
    with open(os.environ.get("LOOKUP_LOG", "/dev/null"), "a") as log:
        log.write(f"{{n}}\\n")
    return f"value {{n}}: " + "x" * {size}
```
"""

# A task that times out on its last call, once, fast: no retry (the journal is written by the
# first attempt already), a timeout of 0.6 s (the calls before the last take milliseconds each:
# a 40-call run takes 0.3 s, these make 12 at most) and a last reply slower than the whole
# timeout (a resume, with more time, waits for that reply too, so not much slower).
FAILS_FAST = {"timeout": 0.6, "max_retries": 0}
SLOW_S = 0.8


def _agent(
    calls: int,
    final: Any,
    *,
    before_final: list[Any] | None = None,
    settings: dict[str, Any] | None = None,
    replay: str = "never",
    size: int = 20,
) -> dict[str, Any]:
    """A workflow whose one task makes ``calls`` model calls: a tool call each, then ``final``."""
    entries: list[Any] = [
        {"tool_calls": [{"name": "lookup", "arguments": {"n": i}}]} for i in range(calls - 1)
    ]
    entries += [*(before_final or []), final]
    return {
        "task.yaml": {"name": "journaled"},
        "replies.yaml": {"tasks": {"agent": entries}},
        "subtasks/agent/instructions.md": "Look numbers up, then answer.",
        "subtasks/agent/task.yaml": {"settings": settings or {}},
        "subtasks/agent/tools.md": TOOLS_MD.format(replay=replay, size=size),
    }


def _journal_files(wf: Path, storage: Path | None = None) -> list[Path]:
    folder = (storage or wf / ".folpipe" / "results") / "journal"
    return sorted(p for p in folder.rglob("*.json")) if folder.is_dir() else []


def test_a_retry_replays_the_paid_calls_and_repeats_only_the_failed_one(make_workflow, run):
    """The 12th call fails (server error); Prefect's retry answers 11 calls from the journal."""
    wf = make_workflow(
        _agent(
            12,
            {"echo": True},
            before_final=[{"error": "server_error"}],
            settings={"max_retries": 1, "retry_delay_seconds": 0},
        )
    )
    result = run(wf)
    assert result.status == "completed", result.error
    agent = result.task("agent")
    assert agent["attempts"] == 2
    assert agent["replayed_calls"] == 11  # the second attempt paid for one call only
    # 11 paid in the first attempt, the one that failed there (counted, no tokens: issue 11),
    # and the retry's one live call: without the journal the retry would pay 12 more
    assert agent["model_calls"] == 13
    assert result.usage["replayed_calls"] == 11
    assert len(_journal_files(wf)) == 12  # one entry per answer (the error is not one)


def test_a_timeout_in_call_12_resumes_with_one_paid_call(make_workflow, run, tmp_path):
    """The issue's case: the 12th call is slower than settings.timeout. The failed run is
    resumed (more time given); the 11 answers come from the journal, the tool runs again."""
    log = tmp_path / "lookups.log"
    files = _agent(12, {"echo": True}, settings=FAILS_FAST)
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": SLOW_S}
    wf = make_workflow(files)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOOKUP_LOG", str(log))
        first = run(wf)
        assert first.status == "failed" and first.task("agent")["model_calls"] == 11
        (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
        second = run(wf)
    assert second.status == "completed", second.error
    assert (second.task("agent")["model_calls"], second.task("agent")["replayed_calls"]) == (1, 11)
    # a tool without `replay: safe` ran again on the resume (its side effects may matter)
    assert log.read_text().split() == [str(n) for n in range(11)] * 2
    reference = make_workflow(_agent(12, {"echo": True}), name="reference")
    uninterrupted = run(reference)
    assert _portable(second.context, wf) == _portable(uninterrupted.context, reference)


def _portable(context: dict[str, Any], root: Path) -> str:
    return json.dumps(context, sort_keys=True).replace(str(root.resolve()), "<wf>")


def test_replay_safe_tools_are_answered_from_the_journal_too(make_workflow, run, tmp_path):
    log = tmp_path / "lookups.log"
    files = _agent(4, {"echo": True}, replay="safe", settings=FAILS_FAST)
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": SLOW_S}
    wf = make_workflow(files)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOOKUP_LOG", str(log))
        assert run(wf).status == "failed"
        (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
        second = run(wf)
    assert second.status == "completed"
    assert log.read_text().split() == ["0", "1", "2"]  # each lookup ran once, in the first run
    assert second.task("agent")["tool_calls"] == 3


def test_an_edit_to_the_instructions_replays_nothing(make_workflow, run):
    wf = make_workflow(_agent(4, {"echo": True}, settings=FAILS_FAST))
    (wf / "replies.yaml").write_text(
        (wf / "replies.yaml").read_text().replace("echo: true", f"{{echo: true, delay: {SLOW_S}}}")
    )
    assert run(wf).status == "failed"
    (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
    (wf / "subtasks/agent/instructions.md").write_text("Look numbers up, then answer briefly.")
    second = run(wf)
    assert second.status == "completed"
    assert (second.task("agent")["model_calls"], second.task("agent")["replayed_calls"]) == (4, 0)


def test_replayed_calls_do_not_count_against_budgets(make_workflow, run):
    """Resumed with a token budget below what the replayed calls once cost: they are free."""
    files = _agent(6, {"echo": True}, settings=FAILS_FAST)
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": SLOW_S}
    wf = make_workflow(files)
    first = run(wf)
    paid = first.task("agent")["usage"]
    assert first.status == "failed" and paid["input_tokens"] > 300
    (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30, token_budget: 300}\n")
    second = run(wf)
    assert second.status == "completed", second.error
    assert second.task("agent")["replayed_calls"] == 5


def test_fresh_and_checkpoints_off_ask_the_model_again(make_workflow, run):
    wf = make_workflow(_agent(3, "done"))
    assert run(wf).task("agent")["model_calls"] == 3
    fresh = run(wf, fresh=True)
    assert (fresh.task("agent")["model_calls"], fresh.task("agent")["replayed_calls"]) == (3, 0)
    off = make_workflow(_agent(3, "done", settings={"cache": False}))
    run(off)
    again = run(off)
    assert (again.task("agent")["model_calls"], again.task("agent")["replayed_calls"]) == (3, 0)
    assert _journal_files(off) == []


def test_the_journal_lives_in_any_result_storage(make_workflow, run, tmp_path):
    """A storage block (here a saved LocalFileSystem) holds the journal next to the
    checkpoints; a resume reads it back through the block."""
    from prefect.filesystems import LocalFileSystem

    basepath = tmp_path / "block-storage"
    block = LocalFileSystem(basepath=str(basepath))
    asyncio.run(_save(block, "folpipe-journal-test"))
    files = _agent(4, {"echo": True}, settings=FAILS_FAST)
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": SLOW_S}
    wf = make_workflow(files)
    options = RunOptions(result_storage=block)
    assert run(wf, options=options).status == "failed"
    assert len(_journal_files(wf, basepath)) == 3 and _journal_files(wf) == []
    (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
    second = run(wf, options=RunOptions(result_storage=block))
    assert second.task("agent")["replayed_calls"] == 3


async def _save(block: Any, name: str) -> None:
    await block.save(name, overwrite=True)


def test_the_journal_grows_with_the_conversation_not_its_square(make_workflow, run):
    """40 calls with 2 KB tool outputs: every request re-sends the whole history (O(N^2)
    bytes in all); the journal holds each answer once (O(N))."""
    wf = make_workflow(_agent(40, "done", size=2000, settings={"max_turns": 50}))
    result = run(wf)
    assert result.status == "completed"
    entries = _journal_files(wf)
    journal = sum(p.stat().st_size for p in entries)
    assert len(entries) == 40 and max(p.stat().st_size for p in entries) < 400
    conversation = 39 * 2000  # the tool outputs alone
    sent = result.task("agent")["usage"]["input_tokens"] * 4  # what the requests carried
    assert sent > 15 * conversation  # quadratic: each request carries the history so far
    assert journal < conversation / 4  # linear, and small: answers only


def test_the_report_and_the_artifact_say_replayed(make_workflow, run):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from prefect_folpipe import flush_artifacts

    files = _agent(3, {"echo": True}, replay="safe", settings=FAILS_FAST)
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": SLOW_S}
    wf = make_workflow(files, name="reported")
    run(wf)
    (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
    second = run(wf)
    document = json.loads(second.to_json())
    assert document["usage"]["replayed_calls"] == 2
    assert document["tasks"][1]["replayed_calls"] == 2 and document["tasks"][1]["model_calls"] == 1

    async def read() -> list[Any]:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["journaled-agent"]))
            )

    assert flush_artifacts(30)
    newest = max(asyncio.run(read()), key=lambda a: a.created)
    assert "1 model call + 2 replayed from the journal (free)" in newest.data
    assert "`lookup` (replayed)" in newest.data


def test_the_journal_reaches_as_far_as_the_checkpoints(make_workflow, run):
    """A run whose checkpoints stay in their lineage (a deployment's run, by default) never
    replays another run's answers; a resume of that lineage does."""
    files = _agent(12, {"echo": True}, settings=FAILS_FAST)
    files["replies.yaml"]["tasks"]["agent"][-1] = {"echo": True, "delay": SLOW_S}
    wf = make_workflow(files)
    first = run(wf, options=RunOptions(across_runs=False))
    assert first.status == "failed" and first.task("agent")["model_calls"] == 11
    other = run(wf, options=RunOptions(across_runs=False))
    assert other.status == "failed"
    assert other.task("agent")["replayed_calls"] == 0  # a new lineage: every call paid again
    (wf / "subtasks/agent/task.yaml").write_text("settings: {timeout: 30}\n")
    resumed = run(wf, options=RunOptions(across_runs=False, lineage=first.flow_run_id))
    assert resumed.status == "completed", resumed.error
    assert (resumed.task("agent")["model_calls"], resumed.task("agent")["replayed_calls"]) == (
        1,
        11,
    )
