"""Deployment entrypoints: a generic, importable flow that runs any workflow folder.

``prefect_folpipe.flows:run_workflow_folder`` (module path
``prefect_folpipe.flows.run_workflow_folder``) is a module-level flow, so Prefect can load it by
reference in a worker or ``serve`` process. A flow built by ``folder_to_flow`` inside a function
cannot be deployed that way (its entrypoint would be ``folder_to_flow.<locals>...``); use this
flow with ``parameters={"path": ...}``, or the per-workflow ``flow.py`` written by ``folpipe
deploy init``.

The flow runs the root task's group in its own body (no extra nesting level): leaves and
branches appear directly under the ``folpipe-run`` flow run, which is named after the folder.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow

from . import telemetry
from .workflow.names import GENERIC_FLOW_NAME

telemetry.prepare()  # a worker imports this module before it starts the flow run (and its span)


def run_name() -> str:
    """Flow-run name ``<folder>-<UTC time>`` from the run's ``path`` parameter."""
    from prefect.runtime import flow_run

    path = str(flow_run.parameters.get("path") or "workflow")
    folder = Path(path).expanduser().resolve().name or "workflow"
    return f"{folder}-{datetime.now(UTC):%Y%m%d-%H%M%S}"


@flow(name=GENERIC_FLOW_NAME, flow_run_name=run_name, persist_result=False)
async def run_workflow_folder(
    path: str,
    context: dict[str, Any] | None = None,
    fresh: bool = False,
    reuse_checkpoints: bool | None = None,
    rerun_from: list[str] | None = None,
    restore_from: str | None = None,
    provider: str | None = None,
    replies: str | None = None,
    result_storage: str | None = None,
) -> dict[str, Any]:
    """Run the workflow folder at ``path`` and return its final context.

    Args:
        path: the workflow folder (a relative path is resolved against the working directory
            set by the deployment's pull steps).
        context: initial context, e.g. the root task's declared inputs.
        fresh: re-run every task: ignore the checkpoints of earlier runs.
        reuse_checkpoints: reuse checkpoints of earlier runs (empty: the workflow's
            settings.cache.across_runs; deployment runs re-run every task unless it opts in).
        rerun_from: task names or paths to ask again, with what runs after them; the rest
            comes from checkpoints (``folpipe run --from``).
        restore_from: the flow run whose checkpoints the other tasks come from (empty: this
            run's own; ``folpipe resume --flow-run ID --from TASK`` sets it).
        provider: override every task's LLM provider (e.g. ``scripted``).
        replies: scripted replies file for ``provider: scripted``.
        result_storage: slug of a Prefect storage block (e.g. ``s3-bucket/folpipe``) holding
            the checkpoints, so that runs on different workers resume from each other.
    """
    from .compile import RunOptions, run_root
    from .compile.api import flow_return, rerun_parameters
    from .validate import load_workflow

    workflow = load_workflow(Path(path).expanduser().resolve())
    options = RunOptions(
        provider=provider, replies=replies, fresh=fresh, across_runs=reuse_checkpoints
    )
    options = replace(options, **rerun_parameters(rerun_from, restore_from))
    if result_storage:
        options.result_storage = await storage_block(result_storage)
    result = await run_root(workflow, context, options)  # it keeps the run record
    return flow_return(workflow, result)


run_workflow = run_workflow_folder
"""The same flow under the entrypoint name deployments made before 0.2 point at
(``prefect_folpipe.flows:run_workflow``); new deployments use :func:`run_workflow_folder`."""


async def storage_block(slug: str) -> Any:
    """The saved Prefect storage block ``slug`` (``block-type/name``), for checkpoints."""
    from prefect.results import aresolve_result_storage

    return await aresolve_result_storage(slug)
