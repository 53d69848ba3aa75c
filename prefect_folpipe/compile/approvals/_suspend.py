"""An approval gate in a deployment's flow run: suspend the run with a typed form and let its
process go (Prefect's ``suspend_flow_run(wait_for_input=...)``); read the answer back when the
resumed run reaches the gate again. A suspended gate emits its events (``_events``): who is
told, and, with ``on_timeout``, when the deployment's automation continues the run.

The suspended run is always the top-level flow run (Prefect cannot suspend a subflow or a task
run): its id is given explicitly, and a gate inside a ``branch_as: subflow`` branch works in a
copy of the top-level flow-run context, so the form and the answer belong to that run.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, ValidationError, create_model

from ...plan.failures import ApprovalFailed
from ...workflow.names import slug
from ._events import DEADLINE_GRACE_S, announce, gate_payload, run_page
from ._question import Question, checked_answer, now, timed_out

DEADLINE_NOTE = "Without an answer by"
"""Starts the form's line about a gate's deadline and default (``folpipe approvals`` reads it)."""
ANNOTATIONS: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list[Any],
    "dict": dict[str, Any],
}


def form_model(question: Question, deadline: float | None = None) -> Any:
    """The ``RunInput`` the Prefect UI renders as the gate's form: one required field per
    ``approval.input`` key, typed (choices become a select), described by the prompt (and,
    for a gate with ``on_timeout``, what happens at ``deadline``)."""
    from prefect.input import RunInput

    fields: dict[str, Any] = {}
    for key, kind in question.fields.items():
        annotation = Literal.__getitem__(kind) if isinstance(kind, tuple) else ANNOTATIONS[kind]
        fields[key] = (annotation, Field(..., title=key.replace("_", " ").capitalize()))
    model = create_model(f"approval_{slug(question.label, limit=40)}", __base__=RunInput, **fields)
    label = f"{question.label} · tool {question.tool}" if question.tool else question.label
    description = f"**Approval for `{label}`**\n\n{question.prompt}"
    if deadline is not None and question.default is not None:
        when = datetime.fromtimestamp(deadline, UTC).isoformat(timespec="seconds")
        answer = ", ".join(f"{k}={json.dumps(v)}" for k, v in question.default.items())
        description += f"\n\n_{DEADLINE_NOTE} {when}, the run continues with {answer}._"
    return model.with_initial_data(description=description)


async def suspend_for_answer(
    gates: Any, question: Question, key: str, pause: str
) -> dict[str, Any]:
    """The answer given while the run was suspended, or suspend it now (raises ``Pause``)."""
    from prefect.exceptions import Pause
    from prefect.flow_runs import asuspend_flow_run

    top = gates.flow_run
    flow_run_id = top.flow_run.id
    pending_key = f"approvals/{key}.pending.json"
    pending = await gates.read(pending_key)
    asked_at = pending.get("asked_at") if isinstance(pending, dict) else None
    if not isinstance(asked_at, int | float):
        asked_at = now()
        await gates.write(pending_key, {"asked_at": asked_at, "flow_run": str(flow_run_id)})
    remaining = None
    if question.timeout is not None:
        remaining = asked_at + question.timeout - now()
        if remaining <= 0:
            return await _given_before_timeout(question, pause, flow_run_id)
    deadline = asked_at + question.timeout if question.timeout is not None else None
    form = form_model(question, deadline)
    timeout = None
    if remaining is not None:  # with a default, the deadline automation continues the run
        timeout = math.ceil(remaining) + (DEADLINE_GRACE_S if question.default else 0)
    try:
        with _in_top_flow_run(top):
            given = await asuspend_flow_run(
                wait_for_input=form, flow_run_id=flow_run_id, timeout=timeout, key=pause
            )
    except ValidationError as exc:  # resumed without (all of) the input
        raise _bad_answer(question, exc) from None
    except RuntimeError as exc:  # the server refused the suspension
        raise ApprovalFailed(
            f"task {question.label!r}: the flow run cannot be suspended for approval: {exc}",
            hint="answer ahead with --approve key=value",
        ) from None
    if given is not None:
        return checked_answer(question, _values(given, question), "the Prefect UI")
    url = run_page(top.flow_run)
    payload = gate_payload(question, gates.workflow_name(), gates.notice(question), url, deadline)
    announce(top.flow_run, payload, question)
    state = top.flow_run_suspension_request.get_state()
    raise Pause(state=state)  # the run stops here; Prefect reschedules it once answered


async def _given_before_timeout(question: Question, pause: str, flow_run_id: Any) -> dict:
    """After the deadline: the answer if one was given in time, else the gate timed out."""
    from prefect.input.actions import aread_flow_run_input
    from prefect.input.run_input import keyset_from_base_key

    keyset = keyset_from_base_key(f"suspended-{pause}")
    try:
        value = await aread_flow_run_input(keyset["response"], flow_run_id=flow_run_id)
    except Exception:  # nothing stored, or the API is unreachable
        value = None
    if not isinstance(value, dict):
        raise timed_out(question)
    return checked_answer(question, value, "the Prefect UI")


def _values(given: Any, question: Question) -> dict[str, Any]:
    return {key: getattr(given, key) for key in question.fields}


def _bad_answer(question: Question, exc: ValidationError) -> ApprovalFailed:
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return ApprovalFailed(
        f"task {question.label!r}: the run was resumed without a valid approval answer: {problems}",
        hint="resume it from the Prefect UI's form, or with run_input holding every key",
    )


@contextlib.contextmanager
def _in_top_flow_run(top: Any) -> Iterator[None]:
    """Make the top-level flow run current (a gate in a subflow stores its form there)."""
    from prefect.context import FlowRunContext

    current = FlowRunContext.get()
    if (
        current is not None
        and current.flow_run is not None
        and current.flow_run.id == top.flow_run.id
    ):
        yield
        return
    with top.model_copy():
        yield
