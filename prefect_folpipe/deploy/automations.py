"""The Prefect automations ``folpipe deploy`` registers with a deployment for its approval
gates (docs/durability.md, "Approval gates").

* ``<flow>/<deployment>: approval deadlines`` (when a gate declares ``on_timeout``): per
  deadline N (seconds) of the workflow's gates, a proactive trigger that starts at the run's
  ``folpipe.approval.deadline.<N>s`` event and expects, within N seconds, an event saying the
  gate was left (``Resuming`` after an answer, cancelled, failed, finished). When none comes,
  the action puts the suspended run back to *Scheduled* (``Resuming``, as an answer would;
  Prefect's resume endpoint cannot be used, it requires the form's keys); the resumed run
  finds the deadline passed and takes the declared default.
* ``<flow>/<deployment>: approval notice via <block>`` (per block named in ``notify``): on the
  run's ``folpipe.approval.waiting`` event naming that block, Prefect's ``SendNotification``
  sends the message through the block.

The automations are owned by the deployment (Prefect deletes them with it, and every
``aapply`` of the deployment removes them first); re-deploying replaces them by name, never
duplicates them. A deployment without such gates gets none.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from uuid import UUID

from ..compile.approvals import (
    LEFT_GATE,
    NOTIFY_PREFIX,
    NOTIFY_ROLE,
    WAITING,
    deadline_event,
    deadline_window,
)
from ..compile.plainhttp import api_client
from ..errors import ConfigError
from ..workflow.approval import notify_names, parse_duration
from ..workflow.toolapproval import parse_tool_approval
from ..workflow.tree import Workflow

SUBJECT = "Approval waiting: {{ event.payload.workflow }} · {{ event.payload.target }}"
BODY = "{{ event.payload.message }}"
RESUMED_BY = "approval deadline passed: the gate continues with its declared default"


def gate_settings(workflow: Workflow) -> tuple[list[float], list[str]]:
    """The deadlines of the gates that declare ``on_timeout`` and the blocks ``notify`` names,
    over every task's gate and every gated tool of the workflow."""
    timeouts: set[float] = set()
    blocks: dict[str, None] = {}
    for timeout, has_default, notify in _gates(workflow):
        if has_default and timeout is not None:
            timeouts.add(timeout)
        blocks.update(dict.fromkeys(notify))
    return sorted(timeouts), list(blocks)


def _gates(workflow: Workflow) -> Iterator[tuple[float | None, bool, tuple[str, ...]]]:
    seen: set[tuple[str, str]] = set()
    for task in workflow.root.walk():
        approval = task.config.approval
        if approval is not None:
            timeout = parse_duration(approval.timeout)
            yield timeout, approval.on_timeout is not None, notify_names(approval.notify)
        for spec in task.tools:
            if "approval" not in spec.metadata or (spec.source_file, spec.name) in seen:
                continue
            seen.add((spec.source_file, spec.name))
            tool = parse_tool_approval(spec.metadata["approval"])
            if tool is not None:
                yield tool.timeout, tool.on_timeout is not None, tool.notify


def deadline_automation(full_name: str, deployment_id: UUID, timeouts: list[float]) -> Any:
    """The automation that continues a run suspended at a gate whose deadline passed."""
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import (
        AutomationCore,
        CompoundTrigger,
        EventTrigger,
        Posture,
    )

    windows = sorted({deadline_window(t) for t in timeouts})
    triggers = [
        EventTrigger(
            after={deadline_event(window)},
            expect={deadline_event(window), *LEFT_GATE},
            for_each={"prefect.resource.id"},
            match={"prefect.resource.id": "prefect.flow-run.*"},
            match_related=_deployment(deployment_id),
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=window),
        )
        for window in windows
    ]
    return AutomationCore(
        name=f"{full_name}: approval deadlines",
        description=f"folpipe: continue a run of {full_name} whose approval gate reached its "
        "deadline with the gate's declared default (on_timeout)",
        trigger=CompoundTrigger(require="any", triggers=triggers),
        actions=[
            ChangeFlowRunState(state=StateType.SCHEDULED, name="Resuming", message=RESUMED_BY)
        ],
        owner_resource=f"prefect.deployment.{deployment_id}",
    )


def notice_automation(full_name: str, deployment_id: UUID, block: str, block_id: UUID) -> Any:
    """The automation that tells ``block`` when a gate naming it starts waiting."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    trigger = EventTrigger(
        expect={WAITING},
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related=[
            _deployment(deployment_id),
            {
                "prefect.resource.id": f"{NOTIFY_PREFIX}{block}",
                "prefect.resource.role": NOTIFY_ROLE,
            },
        ],
        posture=Posture.Reactive,
        threshold=1,
        within=timedelta(0),
    )
    return AutomationCore(
        name=f"{full_name}: approval notice via {block}",
        description=f"folpipe: tell {block} when an approval gate of {full_name} waits",
        trigger=trigger,
        actions=[SendNotification(block_document_id=block_id, subject=SUBJECT, body=BODY)],
        owner_resource=f"prefect.deployment.{deployment_id}",
    )


def _deployment(deployment_id: UUID) -> dict[str, str]:
    return {
        "prefect.resource.id": f"prefect.deployment.{deployment_id}",
        "prefect.resource.role": "deployment",
    }


async def register_approval_automations(
    workflow: Workflow, deployment_id: UUID, full_name: str
) -> list[str]:
    """Create (or replace) the deployment's approval automations; their names. FP410 when a
    ``notify`` block does not exist or the server refuses them."""

    timeouts, blocks = gate_settings(workflow)
    async with api_client() as client:
        wanted = []
        if timeouts:
            wanted.append(deadline_automation(full_name, deployment_id, timeouts))
        for block in blocks:
            block_id = await _notification_block(client, block)
            wanted.append(notice_automation(full_name, deployment_id, block, block_id))
        try:
            await _remove_stale(client, full_name)
            for automation in wanted:
                await client.create_automation(automation)
        except Exception as exc:  # the server's answer, whatever it is
            raise ConfigError(
                f"the server refused the approval automations of {full_name}: {exc}",
                code="FP410",
                hint="automations need Prefect's server services (`prefect server start` runs "
                "them) or Prefect Cloud",
            ) from None
    return [automation.name for automation in wanted]


async def _remove_stale(client: Any, full_name: str) -> None:
    """Delete the automations named after the deployment (from an earlier deploy)."""
    prefix = f"{full_name}: approval "
    for automation in await client.read_automations():
        if automation.name.startswith(prefix):
            await client.delete_automation(automation.id)


async def _notification_block(client: Any, name: str) -> UUID:
    """The id of notification block ``name`` (``slug/name`` or a bare name)."""
    slug, _, bare = name.rpartition("/")
    found = [
        document
        for document in await client.read_block_documents(include_secrets=False)
        if document.name == bare
        and (not slug or getattr(document.block_type, "slug", None) == slug)
        and "notify" in (getattr(document.block_schema, "capabilities", None) or [])
    ]
    if len(found) == 1:
        return found[0].id
    kinds = ", ".join(sorted(f"{d.block_type.slug}/{d.name}" for d in found))
    why = (
        f"which several notification blocks share ({kinds})"
        if found
        else ("but the server has no notification block of that name")
    )
    raise ConfigError(
        f"approval.notify names {name!r}, {why}",
        code="FP410",
        hint="create it (`prefect block create custom-webhook`, or the UI's Blocks page), or "
        "write `slug/name` to pick one",
    )
