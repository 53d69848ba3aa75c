"""``folpipe deploy``: create a Prefect deployment of a workflow folder through the API.

Two entrypoints (see docs/deploy.md):

* per-workflow (default): ``flow.py:flow`` inside the folder, written if missing; the flow is
  named after the workflow and its parameters are the root task's declared inputs. This is the
  same deployment ``prefect deploy`` creates from the prefect.yaml of ``folpipe deploy init``.
* generic (``--generic``): the module-path entrypoint
  ``prefect_folpipe.flows:run_workflow_folder`` with ``path`` = the folder; nothing is written
  into the folder.

Both use pull steps that set the working directory to the folder and install its
``dependencies:`` (plus ``EXTRA_PIP_PACKAGES`` for container work pools). Approval gates with
``on_timeout`` or ``notify`` get automations registered with the deployment
(``deploy.automations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from prefect.runner.storage import LocalStorage

from ..compile.plainhttp import api_client
from ..errors import ConfigError
from ..workflow.config import Schedule
from ..workflow.tree import Workflow
from .automations import register_approval_automations
from .options import DeployRequest, resolve_pool
from .project import (
    ENTRYPOINT,
    default_deployment_name,
    dependency_job_variables,
    ensure_flow_file,
    pull_steps,
    workflow_tags,
)


class WorkflowStorage(LocalStorage):
    """Local storage whose pull steps also install the workflow's dependencies."""

    def __init__(self, workflow: Workflow) -> None:
        super().__init__(str(workflow.root_dir))
        self._steps = pull_steps(workflow, directory=str(self.destination))

    def to_pull_step(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return list(self._steps)


@dataclass(frozen=True)
class DeployResult:
    """The deployment that was created or updated."""

    deployment_id: UUID
    flow_name: str
    name: str
    work_pool: str
    entrypoint: str
    parameters: dict[str, Any]
    schedule: dict[str, Any] | None
    tags: list[str]
    pull_steps: list[dict[str, Any]]
    flow_file: str | None
    automations: list[str] = field(default_factory=list)
    """The approval automations registered with it (``deploy.automations``)."""

    @property
    def full_name(self) -> str:
        return f"{self.flow_name}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "deployment_id": str(self.deployment_id),
            "full_name": self.full_name,
            "flow_name": self.flow_name,
            "name": self.name,
            "work_pool": self.work_pool,
            "entrypoint": self.entrypoint,
            "parameters": self.parameters,
            "schedule": self.schedule,
            "tags": self.tags,
            "pull_steps": self.pull_steps,
            "flow_file": self.flow_file,
            "automations": self.automations,
        }


def api_url() -> str:
    """The configured Prefect API; FP615 when none (deploying to a throw-away server)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise ConfigError(
            "no Prefect API is configured, so the deployment would vanish with a temporary server",
            code="FP615",
            hint="start one (`prefect server start`) and `export PREFECT_API_URL=http://"
            "127.0.0.1:4200/api`, or log in to Prefect Cloud; `folpipe serve` needs no pool",
        )
    return url


async def work_pool_type(name: str) -> str:
    """The type of work pool ``name`` (FP613 unknown pool, FP616 API unreachable)."""
    import httpx
    from prefect.exceptions import ObjectNotFound

    url = api_url()
    try:
        async with api_client() as client:
            pool = await client.read_work_pool(name)
    except ObjectNotFound:
        raise ConfigError(
            f"work pool {name!r} does not exist on {url}",
            code="FP613",
            hint=f"create it: prefect work-pool create {name} --type process",
        ) from None
    except (httpx.HTTPError, OSError, RuntimeError) as exc:
        raise ConfigError(
            f"cannot reach the Prefect API at {url}: {exc}",
            code="FP616",
            hint="is the server running? check PREFECT_API_URL",
        ) from None
    return pool.type


def prefect_schedules(schedule: Schedule | None) -> list[Any]:
    """Prefect schedule objects for a checked folpipe schedule."""
    from prefect.schedules import Cron, Interval, RRule

    if schedule is None:
        return []
    if schedule.cron is not None:
        return [Cron(schedule.cron, timezone=schedule.timezone)]
    if schedule.interval is not None:
        return [Interval(schedule.interval, timezone=schedule.timezone)]
    return [RRule(schedule.rrule or "", timezone=schedule.timezone)]


async def load_deploy_flow(workflow: Workflow, storage: WorkflowStorage, *, generic: bool) -> Any:
    """The Flow to deploy: the generic one, or ``flow.py:flow`` loaded from the folder."""
    from prefect import Flow

    if generic:
        from ..flows import run_workflow_folder

        return run_workflow_folder
    try:
        return await Flow.afrom_source(source=storage, entrypoint=ENTRYPOINT)
    except Exception as exc:  # a user's flow.py may fail in any way
        inner = getattr(exc, "user_exc", None) or exc.__cause__ or exc
        raise ConfigError(
            f"cannot load {ENTRYPOINT} from {workflow.root_dir}: {type(inner).__name__}: {inner}",
            code="FP619",
            hint="fix flow.py, or delete it so that folpipe writes the default one",
        ) from None


async def create_deployment(workflow: Workflow, request: DeployRequest) -> DeployResult:
    """Create (or update) the deployment; every failure is a ConfigError with an FP6xx code."""
    from prefect.deployments.runner import DeploymentApplyError
    from prefect.types.entrypoint import EntrypointType

    pool = resolve_pool(workflow, request.pool)
    pool_type = await work_pool_type(pool)
    written = None if request.generic else ensure_flow_file(workflow.root_dir)
    storage = WorkflowStorage(workflow)
    flow = await load_deploy_flow(workflow, storage, generic=request.generic)
    name = request.name or default_deployment_name(workflow)
    tags = workflow_tags(workflow, list(request.tags))
    deployment = await flow.ato_deployment(
        name=name,
        schedules=prefect_schedules(request.schedule),
        parameters=request.parameters,
        description=workflow.root.config.description or f"folpipe workflow {workflow.name}",
        tags=tags,
        paused=request.paused,
        work_pool_name=pool,
        job_variables=dependency_job_variables(workflow, pool_type),
        entrypoint_type=EntrypointType.MODULE_PATH if request.generic else EntrypointType.FILE_PATH,
    )
    if request.generic:
        deployment.storage = storage
    try:
        deployment_id = await deployment.aapply(work_pool_name=pool)
    except DeploymentApplyError as exc:
        raise ConfigError(
            f"the server rejected the deployment: {exc}",
            code="FP618",
            hint="check the parameters and schedule",
        ) from None
    automations = await register_approval_automations(
        workflow, deployment_id, f"{flow.name}/{name}"
    )
    return DeployResult(
        deployment_id=deployment_id,
        flow_name=flow.name,
        name=name,
        work_pool=pool,
        entrypoint=deployment.entrypoint or "",
        parameters=request.parameters,
        schedule=request.schedule.model_dump(exclude_none=True) if request.schedule else None,
        tags=tags,
        pull_steps=storage.to_pull_step(),
        flow_file=str(written) if written else None,
        automations=automations,
    )
