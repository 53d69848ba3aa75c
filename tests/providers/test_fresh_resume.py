"""A resumed run replays its own journal whatever flags started it (issue 31 point 8).

``--fresh`` means "do not reuse earlier runs' checkpoints", never "forget what this run paid
for": a ``--fresh`` run killed (SIGKILL) in its 6th of 9 model calls and then resumed answers
the 5 calls it had paid for from its journal and repeats only the one in flight.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .test_journal_resume import (
    FOLPIPE,
    IN_FLIGHT_S,
    SCRIPTED,
    _agent,
    _kill_when,
    _run_in_process,
)

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]


def _replies() -> dict[str, Any]:
    calls: list[Any] = [
        {"tool_calls": [{"name": "lookup", "arguments": {"n": n}}]} for n in range(8)
    ]
    calls[5]["delay"] = IN_FLIGHT_S  # the 6th call is in flight when the run is killed
    return {"tasks": {"agent": [*calls, {"echo": True}]}}


def _folpipe(*args: str | Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [FOLPIPE, *map(str, args), "--json"], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_killed_fresh_run_resumed_pays_again_for_at_most_one_call(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = _agent(tmp_path / "wf", SCRIPTED, _replies())
    first = _run_in_process(root, cli_env)
    assert first["status"] == "completed"  # checkpoints to ignore
    journal = root / ".folpipe" / "results" / "journal"
    before = set(journal.rglob("*.json"))

    def five_answers() -> bool:
        return len(set(journal.rglob("*.json")) - before) == 5

    log = tmp_path / "killed.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [FOLPIPE, "run", str(root), "--fresh", "--json"], env=cli_env,
            stdout=subprocess.DEVNULL, stderr=handle, start_new_session=True,
        )  # fmt: skip
    _kill_when(process, five_answers, log)

    resumed = _folpipe("resume", root, env=cli_env)
    assert resumed["status"] == "completed"
    agent = next(row for row in resumed["tasks"] if row["path"] == "agent")
    # 5 answers from the journal; paid: the call in flight again, and the 3 never reached
    assert (agent["replayed_calls"], agent["model_calls"]) == (5, 4)
    assert resumed["context"]["agent"].count("value of") == 8


@pytest.mark.parametrize("deployment", [False, True])
def test_the_journal_belongs_to_the_lineage_a_resume_continues(
    tmp_path: Path, deployment: bool
) -> None:
    """Each run (and each process) has its own spec key; the journal's owner is the checkpoint
    lineage, which ``folpipe resume`` and a deployment run's Retry (the same flow run) keep."""
    from builders import write_workflow

    from prefect_folpipe.compile.checkpoints._store import journal_for
    from prefect_folpipe.compile.shared import RunSpec
    from prefect_folpipe.plan._scope import CheckpointScope
    from prefect_folpipe.validate import load_workflow

    root = write_workflow(tmp_path / "wf", {"task.yaml": {"name": "j"}, "instructions.md": "Hi."})
    task = load_workflow(root).root
    scope = CheckpointScope(lineage="flow-run-1", deployment=deployment, fresh=True)
    journals = [
        journal_for(RunSpec(key=key, root_dir=str(root), storage=tmp_path, checkpoints=scope),
                    task, "single", None, scope.salt(task))
        for key in ("first-process", "resumed-process")
    ]  # fmt: skip
    assert all(journal is not None and journal.only_run for journal in journals)
    assert {journal.run for journal in journals} == {"flow-run-1"}  # type: ignore[union-attr]
    assert journals[0].prefix == journals[1].prefix  # type: ignore[union-attr]
