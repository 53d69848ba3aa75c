"""What a deployment's run tells Prefect when one of its gates starts waiting.

* ``folpipe.approval.waiting``: every suspended gate. Its payload names the workflow, the task
  or tool, the rendered question and the run's page in the UI; a related resource
  ``folpipe.notify.<block>`` (role ``folpipe-notify``) per block of ``approval.notify``. The
  notification automations ``folpipe deploy`` registers send it on through those blocks.
* ``folpipe.approval.deadline.<N>s``: a gate with ``on_timeout``. The deadline automation of
  the deployment waits N seconds after it for a sign that the gate was left (answered,
  cancelled, failed); without one, it schedules the run again, and the gate, past its
  deadline, takes the declared default.

The resource of both is the flow run, so Prefect's automations can act on it.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Any

from ...redaction import mask_data
from ._question import Question

LOG = logging.getLogger("prefect_folpipe.compile")
WAITING = "folpipe.approval.waiting"
DEADLINE_PREFIX = "folpipe.approval.deadline."
NOTIFY_PREFIX = "folpipe.notify."
NOTIFY_ROLE = "folpipe-notify"
MIN_WINDOW_S = 10
"""Prefect's shortest window of a trigger that waits for something not to happen."""
DEADLINE_GRACE_S = 300
"""How long after its deadline Prefect itself fails a suspended run whose gate has
``on_timeout`` (time for the deadline automation to continue it first)."""
LEFT_GATE = frozenset(
    f"prefect.flow-run.{state}"
    for state in ("Resuming", "Cancelling", "Cancelled", "Failed", "Crashed", "Completed")
)
"""The flow run's events that say a suspended gate was left: answered (``Resuming``),
cancelled, failed or finished."""


def run_page(flow_run: Any) -> str | None:
    """The run's page in the Prefect UI (``None`` when no UI is configured)."""
    from prefect.settings import PREFECT_UI_URL

    base = PREFECT_UI_URL.value()
    return f"{base.rstrip('/')}/runs/flow-run/{flow_run.id}" if base else None


def deadline_window(timeout: float) -> int:
    """Seconds the deadline automation waits for a gate of ``timeout`` seconds."""
    return max(MIN_WINDOW_S, math.ceil(timeout))


def deadline_event(timeout: float) -> str:
    return f"{DEADLINE_PREFIX}{deadline_window(timeout)}s"


def gate_payload(question: Question, workflow: str, message: str, url: str | None,
                 deadline: float | None) -> dict[str, Any]:  # fmt: skip
    """What the event says (masked: it is stored by Prefect)."""
    when = datetime.fromtimestamp(deadline, UTC).isoformat() if deadline is not None else None
    return mask_data(
        {
            "workflow": workflow,
            "target": question.label,
            "task": question.task_path or "root",
            "tool": question.tool,
            "question": question.prompt,
            "url": url,
            "deadline": when,
            "on_timeout": dict(question.default) if question.default is not None else None,
            "notify": list(question.notify),
            "message": message,
        }
    )


def announce(flow_run: Any, payload: dict[str, Any], question: Question) -> None:
    """Emit the events of a gate that starts waiting in ``flow_run`` (never raises: a lost
    event costs a notification, not the run)."""
    try:
        from prefect.events import emit_event

        resource = {
            "prefect.resource.id": f"prefect.flow-run.{flow_run.id}",
            "prefect.resource.name": str(flow_run.name),
        }
        related = [
            {"prefect.resource.id": f"prefect.flow.{flow_run.flow_id}",
             "prefect.resource.role": "flow"},
            *[{"prefect.resource.id": f"{NOTIFY_PREFIX}{name}",
               "prefect.resource.role": NOTIFY_ROLE} for name in question.notify],
        ]  # fmt: skip
        if flow_run.deployment_id is not None:
            related.append(
                {"prefect.resource.id": f"prefect.deployment.{flow_run.deployment_id}",
                 "prefect.resource.role": "deployment"}
            )  # fmt: skip
        emit_event(WAITING, resource=resource, related=related, payload=payload)
        if question.default is not None and question.timeout is not None:
            emit_event(
                deadline_event(question.timeout),
                resource=resource,
                related=related,
                payload=payload,
            )
    except Exception as exc:  # the events client is best effort
        LOG.warning("the approval event of %s was not sent: %s", question.label, exc)
