"""Gates waiting across a workflow's runs (``folpipe approvals``), and answering one through
the API (as the Prefect UI's form does).

A run suspended at a gate (a task's or a tool call's) is a top-level flow run in a *Paused*
state whose details hold the keys of its form: the description (the question) and the JSON
schema (the keys and types). Answering resumes it with ``run_input``, typed like
``--approve``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any
from uuid import UUID

from ..compile.plainhttp import api_client
from ..errors import ConfigError
from ..workflow.approval import FieldType, coerce
from ..workflow.tree import Workflow

LABEL = re.compile(r"^\*\*Approval for `(?P<label>[^`]*)`\*\*\s*(?P<prompt>.*)$", re.DOTALL)
DEADLINE = re.compile(r"\s*_Without an answer by (?P<when>\S+), the run continues with .*_\s*$")
"""The form's last line for a gate with ``on_timeout`` (its deadline; Prefect's own pause
timeout is later, see ``compile.approvals``)."""
SCHEMA_TYPES = {
    "boolean": "bool",
    "integer": "int",
    "number": "float",
    "string": "str",
    "array": "list",
    "object": "dict",
}


@dataclass
class WaitingGate:
    """One gate waiting for its answer."""

    flow_run_id: str
    run_name: str
    target: str
    """The task (``path[iteration]``), or the task whose tool call waits."""
    question: str
    waiting_since: str | None
    deadline: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    """Input key -> type (``bool``, ``str``, ...) or the list of choices."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def waiting_gates(workflow: Workflow, *, limit: int = 50) -> list[WaitingGate]:
    """The gates waiting in the workflow's recent top-level runs (newest first)."""

    from ..compile.infra import ensure_api
    from .status import top_level_runs

    ensure_api()
    async with api_client() as client:
        runs = await top_level_runs(client, workflow, limit)
        found = []
        for run in runs:
            gate = await _gate_of(client, run)
            if gate is not None:
                found.append(gate)
    return found


async def _gate_of(client: Any, run: Any) -> WaitingGate | None:
    from prefect.input.actions import aread_flow_run_input

    if run is None:
        return None
    state = run.state
    details = getattr(state, "state_details", None)
    keyset = getattr(details, "run_input_keyset", None)
    if state is None or not state.is_paused() or not keyset:
        return None
    description = await aread_flow_run_input(keyset["description"], flow_run_id=run.id)
    schema = await aread_flow_run_input(keyset["schema"], flow_run_id=run.id)
    match = LABEL.match(str(description or ""))
    prompt = match.group("prompt") if match else str(description or "")
    paused_until = getattr(details, "pause_timeout", None)
    deadline = paused_until.isoformat() if paused_until else None
    declared = DEADLINE.search(prompt)
    if declared:
        prompt, deadline = prompt[: declared.start()], declared.group("when")
    return WaitingGate(
        str(run.id),
        run.name,
        match.group("label") if match else "",
        prompt.strip(),
        state.timestamp.isoformat() if state.timestamp else None,
        deadline,
        {key: _plain(kind) for key, kind in form_fields(schema).items()},
    )


def form_fields(schema: Any) -> dict[str, FieldType]:
    """The form's keys and types from its JSON schema (choices from an enum)."""
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    fields: dict[str, FieldType] = {}
    for key, spec in properties.items():
        if key == "description" or not isinstance(spec, dict):
            continue
        if isinstance(spec.get("enum"), list):
            fields[key] = tuple(str(choice) for choice in spec["enum"])
        else:
            fields[key] = SCHEMA_TYPES.get(str(spec.get("type")), "str")
    return fields


def _plain(kind: FieldType) -> Any:
    return list(kind) if isinstance(kind, tuple) else kind


async def answer_gate(run: str, target: str | None, values: dict[str, str]) -> WaitingGate:
    """Answer the gate waiting in ``run`` (a flow run id or name), typed like ``--approve``;
    the run is resumed through the API."""
    from prefect.flow_runs import aresume_flow_run

    from ..compile.infra import ensure_api

    ensure_api()
    async with api_client() as client:
        gate = await _gate_of(client, await _read_run(client, run)) if run else None
    if gate is None or (target and target not in (gate.target, gate.target.split(" ")[0])):
        raise ConfigError(
            f"no approval waits in run {run!r}{f' for {target!r}' if target else ''}",
            code="FP408",
            hint="list the waiting gates with `folpipe approvals PATH`",
        )
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in gate.fields.items()}
    try:
        answer = coerce(fields, values)
    except ValueError as exc:
        raise ConfigError(
            f"the answer does not fit the form of {gate.target!r}: {exc}",
            code="FP408",
            hint="give every key: " + ", ".join(f"{k}=<{_plain(v)}>" for k, v in fields.items()),
        ) from None
    await aresume_flow_run(UUID(gate.flow_run_id), run_input=answer)
    return gate


async def _read_run(client: Any, run: str) -> Any:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    try:
        return await client.read_flow_run(UUID(run))
    except ValueError:  # not an id: a run name
        found = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[run])), limit=1
        )
        return found[0] if found else None
    except Exception:  # unknown id
        return None
