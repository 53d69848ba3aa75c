"""``folpipe serve``: run a workflow on this machine with Prefect's ``serve`` (no work pool).

``folder_to_flow(path).serve()`` cannot work (its entrypoint is a function-local name the run
process cannot import), so ``serve`` uses the folder's ``flow.py:flow`` (written when missing)
or, with ``generic=True``, the module-level ``prefect_folpipe.flows:run_workflow`` with
``path`` as a default parameter.
"""

from __future__ import annotations

from typing import Any

from ..workflow.config import Schedule
from ..workflow.tree import Workflow
from .api import prefect_schedules
from .project import ENTRYPOINT, default_deployment_name, ensure_flow_file, workflow_tags


def serve_deployment(
    workflow: Workflow,
    *,
    name: str | None = None,
    schedule: Schedule | None = None,
    parameters: dict[str, Any] | None = None,
    generic: bool = False,
) -> Any:
    """The ``RunnerDeployment`` that ``serve`` registers for the workflow."""
    from prefect import Flow
    from prefect.runner.storage import LocalStorage
    from prefect.types.entrypoint import EntrypointType

    options: dict[str, Any] = {
        "name": name or default_deployment_name(workflow),
        "schedules": prefect_schedules(schedule),
        "parameters": parameters or {},
        "tags": workflow_tags(workflow),
        "description": workflow.root.config.description or f"folpipe workflow {workflow.name}",
    }
    if generic:
        from ..flows import run_workflow

        return run_workflow.to_deployment(**options, entrypoint_type=EntrypointType.MODULE_PATH)
    ensure_flow_file(workflow.root_dir)
    storage = LocalStorage(str(workflow.root_dir))
    return Flow.from_source(source=storage, entrypoint=ENTRYPOINT).to_deployment(**options)


def serve(deployment: Any, *, limit: int | None = None) -> None:
    """Serve until interrupted (Ctrl+C); runs execute as subprocesses of this process."""
    from prefect import serve as prefect_serve

    prefect_serve(deployment, limit=limit, print_starting_message=True)
