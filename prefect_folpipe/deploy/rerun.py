"""``folpipe resume --flow-run ID --from TASK`` through the Prefect API: a deployment's run,
re-run from a task.

A new flow run of the same deployment (so its work pool runs it), with the run's own
parameters plus ``rerun_from`` (the tasks to ask again) and ``restore_from`` (the run whose
checkpoints the other tasks come from: the run named, or the one it itself restored from).
Within that lineage, the tasks before the named one come back ``Cached``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from ..compile.plainhttp import api_client
from ..errors import ConfigError


async def rerun_through_api(flow_run_id: str, names: Sequence[str]) -> dict[str, Any]:
    """Create the re-run; FP451 when the API does not know the run or it has no deployment."""
    from prefect.exceptions import ObjectNotFound

    try:
        run_id = UUID(flow_run_id)
    except ValueError:
        raise _unknown(flow_run_id) from None
    async with api_client() as client:
        try:
            original = await client.read_flow_run(run_id)
        except ObjectNotFound:
            raise _unknown(flow_run_id) from None
        if original.deployment_id is None:
            raise ConfigError(
                f"flow run {original.name} ({flow_run_id}) was not made from a deployment",
                code="FP451",
                hint="re-run a local run with `folpipe run PATH --from TASK`",
            )
        parameters = dict(original.parameters or {})
        parameters["restore_from"] = parameters.get("restore_from") or str(original.id)
        parameters["rerun_from"] = list(names)
        deployment = await client.read_deployment(original.deployment_id)
        created = await client.create_flow_run_from_deployment(
            deployment.id,
            parameters=parameters,
            tags=list(original.tags or []),
        )
    return {
        "flow_run_id": str(created.id),
        "name": created.name,
        "rerun_of": flow_run_id,
        "from": list(names),
        "deployment": deployment.name,
        "work_pool": deployment.work_pool_name,
        "state": created.state.name if created.state else "Scheduled",
    }


def _unknown(flow_run_id: str) -> ConfigError:
    return ConfigError(
        f"no flow run {flow_run_id!r} on this Prefect API",
        code="FP451",
        hint="copy the id from `folpipe status PATH` or the UI",
    )
