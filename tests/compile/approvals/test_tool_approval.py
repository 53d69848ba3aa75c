"""Approval of tool calls on real Prefect runs (no deployment): ``--approve TOOL:...``, the
stored answer bound to the call, a terminal, a deadline's default, and nobody to answer."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from builders import deploy_tools_md

from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.validate import validate_workflow

pytestmark = pytest.mark.prefect


GATE = '{prompt: "Deploy {{ args.version }}?", input: {approved: bool, reason: str}}'


def _workflow(make_workflow: Any, approval: str = GATE, **task: Any) -> Path:
    return make_workflow(
        {
            "task.yaml": {"name": "pipeline"},
            "subtasks/10_release/task.yaml": {"name": "release", **task},
            "subtasks/10_release/instructions.md": "Deploy 1.2.",
            "subtasks/10_release/tools.md": deploy_tools_md(approval),
            "replies.yaml": {
                "default": [
                    {"tool_calls": [{"name": "deploy", "arguments": {"version": "1.2"}}]},
                    {"echo": True},
                ]
            },
        }
    )


def _deployed(wf: Path) -> Path:
    return wf / "subtasks" / "10_release" / "deployed.txt"


class Person:
    def __init__(self, answer: dict[str, Any], delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.questions: list[Any] = []

    def __call__(self, question: Any) -> dict[str, Any]:
        self.questions.append(question)
        time.sleep(self.delay)
        return self.answer


def test_a_tool_with_approval_validates_cleanly(make_workflow):
    wf = _workflow(make_workflow)
    assert [d for d in validate_workflow(wf) if d.severity.value == "error"] == []
    wf2 = _workflow(make_workflow, "true")
    assert [d for d in validate_workflow(wf2) if d.severity.value == "error"] == []


@pytest.mark.parametrize(
    ("approval", "code"),
    [
        ("{input: {approved: boolean}}", "FP166"),
        ('{prompt: "Deploy {{ args.version | upper }}?"}', "FP167"),
        ("{timeout: soon}", "FP168"),
        ("{on_timeout: {approved: false}}", "FP172"),
        ("{timeout: 5s, on_timeout: {approved: maybe}}", "FP172"),
        ("{promt: x}", "FP172"),
    ],
)
def test_a_bad_approval_block_is_a_coded_diagnostic(make_workflow, approval, code):
    wf = _workflow(make_workflow, approval)
    found = [d for d in validate_workflow(wf) if d.code == code]
    assert found and found[0].file.endswith("tools.md") and found[0].line == 1, found


def test_declined_the_tool_does_not_run_and_the_model_reads_why(make_workflow, run):
    wf = _workflow(make_workflow)
    options = RunOptions(approvals={"deploy": {"approved": "no", "reason": "freeze week"}})
    result = run(wf, options=options)
    assert result.status == "completed", result.error
    assert not _deployed(wf).exists()
    echoed = result.context["release"]
    assert "declined" in echoed and "freeze week" in echoed and "did not run" in echoed
    # the answer in the record: the run document and the run record
    (answer,) = result.task("release")["approvals"]
    assert answer["target"] == "release/deploy" and answer["kind"] == "tool"
    assert answer["answered_by"] == "--approve" and answer["answered_at"]
    assert answer["answer"] == {"approved": False, "reason": "freeze week"}
    assert json.loads(result.to_json())["tasks"][1]["approvals"][0]["question"] == "Deploy 1.2?"
    (record,) = [json.loads(p.read_text()) for p in (wf / ".folpipe" / "runs").glob("*.json")]
    assert record["approvals"] == [
        f'release/deploy: approved=false, reason="freeze week" (--approve, {answer["answered_at"]})'
    ]


def test_approved_the_tool_runs_with_the_models_arguments(make_workflow, run):
    wf = _workflow(make_workflow)
    result = run(wf, options=RunOptions(approvals={"release/deploy": {"approved": "yes"}}))
    assert result.status == "completed", result.error
    assert _deployed(wf).read_text() == "1.2"
    assert "deployed 1.2" in result.context["release"]


def test_nobody_to_answer_the_tool_never_runs_fp530_and_on_failure_applies(make_workflow, run):
    wf = _workflow(
        make_workflow,
        on_failure="use_default",
        default_output={"shipped": False},
        output=["shipped"],
    )
    result = run(wf)
    assert result.status == "completed"
    assert not _deployed(wf).exists()
    assert result.task("release")["status"] == "failed"
    error = result.task("release")["error"]
    assert "FP530" in error and "Traceback" not in error
    assert result.context["shipped"] is False


def test_the_terminal_asks_once_and_a_retried_pass_never_asks_again(make_workflow, run):
    wf = _workflow(make_workflow, settings={"max_retries": 1, "retry_delay_seconds": 0})
    (wf / "replies.yaml").write_text(
        json.dumps(
            {
                "default": [
                    {"tool_calls": [{"name": "deploy", "arguments": {"version": "1.2"}}]},
                    {"error": "server_error"},
                    {"echo": True},
                ]
            }
        )
    )
    person = Person({"approved": "yes", "reason": ""})
    result = run(wf, options=RunOptions(ask=person))
    assert result.status == "completed", result.error
    assert result.task("release")["attempts"] == 2
    # the retry replays the first model call and the same call's stored answer: one question
    assert [q.prompt for q in person.questions] == ["Deploy 1.2?"]
    assert _deployed(wf).read_text() == "1.2"


def test_a_deadline_with_on_timeout_continues_with_the_default(make_workflow, run, caplog):
    gate = '{timeout: 1s, on_timeout: {approved: false, reason: "no answer in time"}, notify: ops}'
    wf = _workflow(make_workflow, gate)
    person = Person({"approved": "yes"}, delay=30)
    started = time.monotonic()
    result = run(wf, options=RunOptions(ask=person))
    assert time.monotonic() - started < 25
    assert result.status == "completed", result.error
    assert not _deployed(wf).exists()
    assert "no answer in time" in result.context["release"]
    assert result.task("release")["approvals"][0]["answered_by"] == "default at deadline"
    # notify: a local run prints who waits for what, and where
    (notice,) = [r.getMessage() for r in caplog.records if " waits: " in r.getMessage()]
    assert "workflow 'pipeline' waits: approval of a call of tool 'deploy'" in notice
    assert "(task 'release')" in notice and 'Run tool \'deploy\' with {"version": "1.2"}?' in notice
    assert result.flow_run_id and str(result.flow_run_id) in notice  # the run's page, or its id


def test_a_task_gate_deadline_with_on_timeout_takes_the_default(make_workflow, run):
    wf = make_workflow(
        {
            "task.yaml": {"name": "pipeline"},
            "subtasks/10_ship/task.yaml": {
                "name": "ship",
                "approval": {
                    "prompt": "Ship?",
                    "timeout": "1s",
                    "on_timeout": {"approved": False, "reason": "nobody answered"},
                },
                "conditions": {"skip_if": "not context.approved"},
            },
            "subtasks/10_ship/instructions.md": "Ship.",
            "replies.yaml": {"default": "ok"},
        }
    )
    result = run(wf, options=RunOptions(ask=Person({"approved": "yes"}, delay=30)))
    assert result.status == "completed", result.error
    assert result.task("ship")["status"] == "skipped"
    assert result.context["approved"] is False and result.context["reason"] == "nobody answered"
    (answer,) = result.task("ship")["approvals"]
    assert answer["answered_by"] == "default at deadline" and answer["kind"] == "task"
