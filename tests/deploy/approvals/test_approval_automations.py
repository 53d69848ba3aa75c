"""The approval automations of a deployment, built without a server: which gates get one,
what their triggers wait for, and the checked ``approval.notify`` (FP409)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import uuid4

from prefect_folpipe.compile.approvals._events import gate_payload
from prefect_folpipe.compile.approvals._question import Question
from prefect_folpipe.deploy.automations import (
    deadline_automation,
    gate_settings,
    notice_automation,
)
from prefect_folpipe.redaction import register_secret
from prefect_folpipe.validate import load_workflow, validate_workflow

TOOLS_MD = """\
## deploy
> approval: {approval}

Deploy.

```python
def deploy(version: str) -> str:
    \"\"\"Deploy.

    Args:
        version: The version.
    \"\"\"
    return version
```
"""


def _workflow(make_workflow: Any, gate: dict[str, Any] | None, tool: str | None) -> Any:
    files: dict[str, Any] = {
        "task.yaml": {"name": "pipe"},
        "subtasks/10_ship/task.yaml": {"name": "ship", **({"approval": gate} if gate else {})},
        "subtasks/10_ship/instructions.md": "Ship.",
    }
    if tool:
        files["subtasks/10_ship/tools.md"] = TOOLS_MD.format(approval=tool)
    return make_workflow(files)


def test_deadlines_and_blocks_are_read_from_task_and_tool_gates(make_workflow: Any) -> None:
    gate = {"prompt": "Ship?", "timeout": "2h", "on_timeout": {"approved": False},
            "notify": ["ops-hook", "slack-webhook/ops"]}  # fmt: skip
    tool = "{timeout: 5s, on_timeout: {approved: false}, notify: ops-hook}"
    workflow = load_workflow(_workflow(make_workflow, gate, tool))
    assert gate_settings(workflow) == ([5.0, 7200.0], ["ops-hook", "slack-webhook/ops"])
    # a timeout without a default, or no gate at all: no deadline automation
    plain = load_workflow(_workflow(make_workflow, {"prompt": "Ship?", "timeout": "1h"}, "true"))
    assert gate_settings(plain) == ([], [])


def test_the_deadline_automation_waits_per_deadline_for_the_gate_to_be_left() -> None:
    deployment = uuid4()
    automation = deadline_automation("pipe/prod", deployment, [5.0, 7200.0, 3.0])
    assert automation.name == "pipe/prod: approval deadlines"
    assert automation.owner_resource == f"prefect.deployment.{deployment}"
    first, second = automation.trigger.triggers
    # Prefect's shortest proactive window is 10 s: a 3 s and a 5 s deadline share it
    assert first.within == timedelta(seconds=10) and second.within == timedelta(hours=2)
    assert first.after == {"folpipe.approval.deadline.10s"}
    assert {"prefect.flow-run.Resuming", "prefect.flow-run.Cancelled"} <= first.expect
    assert "prefect.flow-run.Suspended" not in first.expect
    assert first.posture.value == "Proactive" and first.for_each == {"prefect.resource.id"}
    (action,) = automation.actions
    assert action.type == "change-flow-run-state" and action.name == "Resuming"


def test_the_notice_automation_reacts_to_gates_that_name_its_block() -> None:
    deployment, block = uuid4(), uuid4()
    automation = notice_automation("pipe/prod", deployment, "ops-hook", block)
    assert automation.name == "pipe/prod: approval notice via ops-hook"
    assert automation.trigger.expect == {"folpipe.approval.waiting"}
    related = {v for spec in automation.trigger.match_related for v in spec["prefect.resource.id"]}
    assert related == {f"prefect.deployment.{deployment}", "folpipe.notify.ops-hook"}
    (action,) = automation.actions
    assert action.block_document_id == block and "event.payload.message" in action.body


def test_the_event_payload_names_the_gate_and_masks_secrets() -> None:
    register_secret("sk-live-123456789")
    question = Question("release", "release", "Deploy with sk-live-123456789?",
                        {"approved": "bool"}, 5.0, {"approved": False}, tool="deploy",
                        notify=("ops-hook",))  # fmt: skip
    payload = gate_payload(question, "pipe", "workflow 'pipe' waits", "http://ui/x", 0.0)
    assert payload["workflow"] == "pipe" and payload["tool"] == "deploy"
    assert payload["task"] == "release" and payload["url"] == "http://ui/x"
    assert "sk-live-123456789" not in str(payload) and payload["notify"] == ["ops-hook"]
    assert payload["deadline"] == "1970-01-01T00:00:00+00:00"


def test_a_bad_notify_is_a_coded_diagnostic_with_file_and_line(make_workflow: Any) -> None:
    wf = _workflow(make_workflow, {"prompt": "Ship?", "notify": {"slack": "x"}}, None)
    (found,) = [d for d in validate_workflow(wf) if d.code == "FP409"]
    assert found.file.endswith("task.yaml") and found.line is not None
    assert "approval.notify" in found.message
    wf = _workflow(make_workflow, None, "{notify: [Bad Name]}")
    (found,) = [d for d in validate_workflow(wf) if d.code == "FP409"]
    assert found.file.endswith("tools.md") and found.line == 1
    assert "tool 'deploy'" in found.message
