"""``folpipe serve``: run a workflow on this machine with Prefect's ``serve`` (no work pool).

``folder_to_flow(path).serve()`` cannot work (its entrypoint is a function-local name the run
process cannot import), so ``serve`` uses the folder's ``flow.py:flow`` (written when missing)
or, with ``generic=True``, the module-level ``prefect_folpipe.flows:run_workflow_folder`` with
``path`` as a default parameter.

Serving registers a deployment and, when it stops, Prefect pauses it. A deployment of the
same name made for a work pool (``folpipe deploy``, ``prefect deploy``) would have its runs
taken from its workers and be left paused, so ``serve`` uses its own default name
(``<name>-serve``) and refuses (FP624) a ``--name`` that belongs to a work pool's deployment.
"""

from __future__ import annotations

from typing import Any

from ..compile.plainhttp import api_client
from ..errors import ConfigError
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
        from ..flows import run_workflow_folder

        return run_workflow_folder.to_deployment(
            **options, entrypoint_type=EntrypointType.MODULE_PATH
        )
    ensure_flow_file(workflow.root_dir)
    storage = LocalStorage(str(workflow.root_dir))
    return Flow.from_source(source=storage, entrypoint=ENTRYPOINT).to_deployment(**options)


SERVE_SUFFIX = "-serve"


def serve_name(workflow: Workflow, name: str | None) -> str:
    """``--name``, else the workflow's deployment name + ``-serve`` (never the name of the
    deployment ``folpipe deploy`` / ``prefect deploy`` make for a work pool)."""
    return name or f"{default_deployment_name(workflow)}{SERVE_SUFFIX}"


async def check_not_a_pool_deployment(flow_name: str, name: str) -> None:
    """FP624 when ``<flow_name>/<name>`` is a work pool's deployment: serving it would take
    its runs from the pool's workers and leave it paused."""
    import httpx
    from prefect.exceptions import ObjectNotFound

    try:
        async with api_client() as client:
            existing = await client.read_deployment_by_name(f"{flow_name}/{name}")
    except ObjectNotFound:
        return
    except (httpx.HTTPError, OSError) as exc:
        raise ConfigError(
            f"cannot reach the Prefect API: {exc}",
            code="FP616",
            hint="is the server running? check PREFECT_API_URL",
        ) from None
    if existing.work_pool_name:
        raise ConfigError(
            f"deployment '{flow_name}/{name}' runs on work pool '{existing.work_pool_name}': "
            "serving it here would take its runs from the pool's workers and pause it on stop",
            code="FP624",
            hint=f"serve under another name: --name {name}{SERVE_SUFFIX}",
        )


def serve(deployment: Any, *, limit: int | None = None) -> None:
    """Serve until interrupted (Ctrl+C); runs execute as subprocesses of this process."""
    from prefect import serve as prefect_serve

    prefect_serve(deployment, limit=limit, print_starting_message=True)
