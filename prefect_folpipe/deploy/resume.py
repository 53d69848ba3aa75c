"""``folpipe resume`` through the Prefect API: retry a deployment's failed run, as the UI does.

The UI's Retry puts the *same* flow run back into a Scheduled state (``AwaitingRetry``); the
deployment's work pool picks it up, and since checkpoints are keyed on the run's lineage (its
flow run id, see ``compile.scope``) every task it finished comes back Cached. A run made
without a deployment has nowhere to be retried but here: ``folpipe resume`` runs it again
locally from its run record.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from ..compile.plainhttp import api_client
from ..errors import ConfigError
from ..workflow.tree import Workflow
from .status import top_level_runs

RESUMABLE = ("FAILED", "CRASHED")
LOOKBACK = 20
"""How many recent runs of the folder ``resume`` looks through for one to retry."""


@dataclass(frozen=True)
class Resumable:
    """A flow run ``folpipe resume`` can take up: through the API (deployment) or locally."""

    flow_run_id: str
    name: str
    state: str
    started: float
    """POSIX time it started (or was created), to compare with local run records."""
    deployment_id: str | None

    @property
    def via_api(self) -> bool:
        return self.deployment_id is not None


def _started(run: Any) -> float:
    when = run.start_time or run.expected_start_time or run.created
    return when.timestamp() if when is not None else 0.0


def _resumable(run: Any) -> Resumable:
    return Resumable(
        flow_run_id=str(run.id),
        name=run.name,
        state=run.state.name if run.state else "Unknown",
        started=_started(run),
        deployment_id=str(run.deployment_id) if run.deployment_id else None,
    )


async def latest_failed_run(workflow: Workflow) -> Resumable | None:
    """The folder's most recent failed or crashed run known to the API, if any (a run whose
    process was killed is first marked ``Crashed``, so a killed deployment run is retried
    through the API rather than run again here)."""

    from ..compile.infra import settle_crashed_runs

    await settle_crashed_runs(workflow.root_dir)
    async with api_client() as client:
        for run in await top_level_runs(client, workflow, LOOKBACK):
            if run.state is not None and run.state.type.value in RESUMABLE:
                return _resumable(run)
    return None


async def read_run(flow_run_id: str) -> Resumable:
    """The flow run ``--flow-run ID`` names (FP451 when the API does not know it)."""
    from prefect.exceptions import ObjectNotFound

    try:
        run_id = UUID(flow_run_id)
        async with api_client() as client:
            return _resumable(await client.read_flow_run(run_id))
    except (ValueError, ObjectNotFound):
        raise ConfigError(
            f"no flow run {flow_run_id!r} on this Prefect API",
            code="FP451",
            hint="copy the id from `folpipe status PATH` or the UI",
        ) from None


async def retry_through_api(run: Resumable) -> dict[str, Any]:
    """Put the deployment's run back to Scheduled (``AwaitingRetry``): its work pool runs it
    again, same flow run. FP451 when its state cannot be retried."""
    from prefect.client.schemas.responses import SetStateStatus
    from prefect.states import AwaitingRetry

    async with api_client() as client:
        current = await client.read_flow_run(UUID(run.flow_run_id))
        kind = current.state.type.value if current.state else "UNKNOWN"
        if kind not in RESUMABLE:
            named = current.state.name if current.state else kind
            raise ConfigError(
                f"flow run {run.name} ({run.flow_run_id}) is {named}, not failed or crashed",
                code="FP451",
                hint="resume takes up a run that failed or crashed",
            )
        state = AwaitingRetry(message="Retried by folpipe resume (checkpoints reused)")
        result = await client.set_flow_run_state(current.id, state=state, force=True)
        if result.status != SetStateStatus.ACCEPT:
            reason = getattr(result.details, "reason", None) or result.status.value
            raise ConfigError(
                f"the server refused to retry flow run {run.flow_run_id}: {reason}",
                code="FP451",
                hint="retry it from the UI, or check the server's logs",
            )
        deployment = await client.read_deployment(current.deployment_id)
    return {
        "flow_run_id": run.flow_run_id,
        "name": run.name,
        "deployment": f"{deployment.name}",
        "work_pool": deployment.work_pool_name,
        "state": "AwaitingRetry",
    }


async def wait_until_final(flow_run_id: str, timeout: float) -> Any:
    """The run's state once it is final (or the last one seen when ``timeout`` passes)."""

    deadline = time.monotonic() + timeout
    async with api_client() as client:
        while True:
            run = await client.read_flow_run(UUID(flow_run_id))
            final = run.state is not None and run.state.is_final()
            if final or time.monotonic() > deadline:
                return run.state
            await asyncio.sleep(1.0)
