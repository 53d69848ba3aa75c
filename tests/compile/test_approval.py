"""Approval gates on real Prefect runs (no deployment): presets, a terminal, no answer, the
answer checkpointed, and routing on it with skip_if, until and graph edges.

The deployment path (suspend, answer through the API, resume) is in
tests/deploy/approvals/test_approval_server.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.options import RunOptions

pytestmark = pytest.mark.prefect


def _release(gate: dict[str, Any] | None = None, **ship: Any) -> dict[str, Any]:
    return {
        "task.yaml": {
            "name": "release",
            "subtasks": {"execution_type": "sequential"},
            "context": {"version": "1.2"},
        },
        "replies.yaml": {"tasks": {"build": [{"output": {"artifact": "b42"}}]}},
        "subtasks/10_build/instructions.md": "Build it.",
        "subtasks/10_build/task.yaml": {"output": ["artifact"]},
        "subtasks/20_ship/instructions.md": "Ship it.",
        "subtasks/20_ship/task.yaml": {
            "approval": gate
            or {
                "prompt": "Ship release {{ context.version }} ({{ context.artifact }})?",
                "input": {"approved": "bool", "comment": "str"},
            },
            "conditions": {"skip_if": "not context.approved"},
            **ship,
        },
        "subtasks/30_announce/instructions.md": "Announce.",
        "subtasks/30_announce/task.yaml": {"conditions": {"skip_if": "not context.approved"}},
    }


class Person:
    """Stands in for a person at the terminal: records questions, gives answers in turn."""

    def __init__(self, *answers: dict[str, Any], delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.questions: list[Any] = []
        self.delay = delay

    def __call__(self, question: Any) -> dict[str, Any]:
        self.questions.append(question)
        time.sleep(self.delay)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def _statuses(result: Any) -> dict[str, str]:
    return {row["path"]: row["status"] for row in result.tasks}


def test_an_approval_merges_into_the_context_and_is_never_asked_again(make_workflow, run):
    wf = make_workflow(_release())
    person = Person({"approved": "yes", "comment": "go"})
    first = run(wf, options=RunOptions(ask=person))
    assert first.status == "completed", first.error
    assert [q.prompt for q in person.questions] == ["Ship release 1.2 (b42)?"]
    assert first.context["approved"] is True and first.context["comment"] == "go"
    assert _statuses(first)["announce"] == "completed"
    assert list((wf / ".folpipe" / "results" / "approvals").glob("ship-*.json"))
    # edit a task after the gate: the gate's answer comes back from its checkpoint
    (wf / "subtasks/30_announce/instructions.md").write_text("Announce it loudly.")
    again = run(wf, options=RunOptions(ask=Person({"approved": "no", "comment": "never"})))
    assert again.status == "completed"
    assert again.context["approved"] is True and again.task("announce")["model_calls"] == 1


def test_a_rejection_routes_with_skip_if(make_workflow, run):
    wf = make_workflow(_release())
    result = run(wf, options=RunOptions(approvals={"": {"approved": "no", "comment": "not yet"}}))
    assert result.status == "completed"
    assert _statuses(result) == {
        "": "completed",
        "build": "completed",
        "ship": "skipped",
        "announce": "skipped",
    }
    assert result.context["approved"] is False and result.context["comment"] == "not yet"


def test_a_changed_question_is_asked_again(make_workflow, run):
    wf = make_workflow(_release())
    run(wf, options=RunOptions(approvals={"ship": {"approved": "yes", "comment": "ok"}}))
    (wf / "replies.yaml").write_text("default: ok\ntasks:\n  build: [{output: {artifact: b43}}]\n")
    (wf / "subtasks/10_build/instructions.md").write_text("Build it again.")
    person = Person({"approved": False, "comment": "b43 is broken"})
    second = run(wf, options=RunOptions(ask=person))
    assert [q.prompt for q in person.questions] == ["Ship release 1.2 (b43)?"]
    assert second.context["approved"] is False


def test_nobody_to_answer_fails_the_gate_and_on_failure_applies(make_workflow, run):
    wf = make_workflow(
        _release(on_failure="use_default", default_output={"shipped": False}, output=["shipped"])
    )
    result = run(wf)  # no terminal, no deployment, no preset
    assert result.status == "completed"
    assert result.task("ship")["status"] == "failed"
    assert "FP530" in result.task("ship")["error"]
    assert result.context["shipped"] is False
    assert result.context["_errors"][0]["task"] == "ship"


def test_a_timeout_then_on_failure_applies(make_workflow, run):
    gate = {"prompt": "Ship?", "input": {"approved": "bool"}, "timeout": "1s"}
    wf = make_workflow(_release(gate, on_failure="skip"))
    started = time.monotonic()
    result = run(wf, options=RunOptions(ask=Person({"approved": True}, delay=5)))
    assert time.monotonic() - started < 30
    assert result.status == "completed"
    assert result.task("ship")["status"] == "failed"
    assert "FP531" in result.task("ship")["error"]
    assert result.task("announce")["status"] == "skipped"  # nobody approved


def test_a_preset_of_the_wrong_type_is_a_coded_failure(make_workflow, run):
    wf = make_workflow(_release())
    result = run(wf, options=RunOptions(approvals={"": {"approved": "maybe", "comment": "x"}}))
    assert result.status == "failed"
    assert "FP530" in result.task("ship")["error"] and "yes or no" in result.task("ship")["error"]


def _loop() -> dict[str, Any]:
    return {
        "task.yaml": {
            "name": "drafts",
            "subtasks": {
                "execution_type": "loop",
                "until": "context.decision == 'approve'",
                "max_iterations": 5,
            },
        },
        "replies.yaml": {
            "tasks": {
                "draft": [{"output": {"text": f"draft {n}"}} for n in range(1, 6)],
            }
        },
        "subtasks/10_draft/instructions.md": "Write a draft.",
        "subtasks/10_draft/task.yaml": {"output": ["text"]},
        "subtasks/20_review/task.yaml": {
            "approval": {
                "prompt": "Publish {{ context.text }}?",
                "input": {"decision": ["approve", "changes"], "notes": "str"},
            }
        },
    }


def test_request_changes_in_a_loop_until_approved(make_workflow, run):
    wf = make_workflow(_loop())
    person = Person(
        {"decision": "changes", "notes": "shorter"},
        {"decision": "changes", "notes": "friendlier"},
        {"decision": "approve", "notes": ""},
    )
    result = run(wf, options=RunOptions(ask=person))
    assert result.status == "completed", result.error
    assert [q.prompt for q in person.questions] == [
        "Publish draft 1?",
        "Publish draft 2?",
        "Publish draft 3?",
    ]
    assert [q.label for q in person.questions] == ["review[1]", "review[2]", "review[3]"]
    assert result.task("review")["iterations"] == 3
    assert result.context["decision"] == "approve"
    again = run(wf)  # nobody to ask: every answer is a checkpoint now
    assert again.status == "completed" and again.context == result.context


def _graph() -> dict[str, Any]:
    return {
        "task.yaml": {"name": "routed", "subtasks": {"execution_type": "graph"}},
        "subtasks/gate/task.yaml": {
            "approval": {"prompt": "Which way?", "input": {"route": ["left", "right"]}}
        },
        "subtasks/left/instructions.md": "Go left.",
        "subtasks/left/task.yaml": {
            "depends_on": ["gate"],
            "conditions": {"skip_if": "context.route != 'left'"},
        },
        "subtasks/right/instructions.md": "Go right.",
        "subtasks/right/task.yaml": {
            "depends_on": ["gate"],
            "conditions": {"skip_if": "context.route != 'right'"},
        },
    }


def test_graph_edges_route_on_the_answer(make_workflow, run):
    wf = make_workflow(_graph())
    result = run(wf, options=RunOptions(approvals={"gate": {"route": "right"}}))
    assert result.status == "completed", result.error
    assert _statuses(result) == {
        "": "completed",
        "gate": "completed",
        "left": "skipped",
        "right": "completed",
    }
    assert result.context["route"] == "right"


@pytest.fixture
def parallel_gate(make_workflow) -> Iterator[Path]:
    yield make_workflow(
        {
            "task.yaml": {"name": "side_by_side"},
            "subtasks/a/instructions.md": "A.",
            "subtasks/b/instructions.md": "B.",
            "subtasks/b/task.yaml": {
                "approval": {"prompt": "B may run?", "input": {"go": "bool"}},
                "conditions": {"skip_if": "not context.go"},
            },
        }
    )


def test_a_gate_beside_parallel_siblings(parallel_gate, run):
    result = run(parallel_gate, options=RunOptions(approvals={"b": {"go": "true"}}))
    assert _statuses(result) == {"": "completed", "a": "completed", "b": "completed"}
    assert result.context["go"] is True


def test_only_prefect_signals_pass_up_as_a_suspension() -> None:
    """A ``Pause`` (a gate suspended the run) passes up the tree as a control signal; an
    outside signal (Prefect's ``TerminationSignal``: SIGTERM in a worker) or Ctrl-C is an
    interruption, recorded as such."""
    from prefect.exceptions import Pause, TerminationSignal

    from prefect_folpipe.plan.execution._fanout import is_signal

    assert is_signal(Pause())
    assert not is_signal(TerminationSignal(15))
    assert not is_signal(KeyboardInterrupt())
    assert not is_signal(asyncio.CancelledError())
    assert not is_signal(ValueError("x"))


def test_the_answer_reaches_as_far_as_the_checkpoints(make_workflow, run):
    """A run whose checkpoints do not reach across runs (a deployment's run, by default) asks
    again; a resume of its lineage does not."""
    wf = make_workflow(_release())
    first = run(
        wf, options=RunOptions(ask=Person({"approved": "yes", "comment": "go"}), across_runs=False)
    )
    assert first.status == "completed" and first.context["approved"] is True
    asked = Person({"approved": "no", "comment": "not tonight"})
    nightly = run(wf, options=RunOptions(ask=asked, across_runs=False))
    assert len(asked.questions) == 1 and nightly.context["approved"] is False
    resumed_asker = Person({"approved": "no", "comment": "unused"})
    resumed = run(
        wf, options=RunOptions(ask=resumed_asker, across_runs=False, lineage=first.flow_run_id)
    )
    assert resumed_asker.questions == [] and resumed.context["approved"] is True
