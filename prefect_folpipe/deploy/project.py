"""``folpipe deploy init``: make a workflow folder a Prefect project.

Writes ``PATH/flow.py`` (a module-level Flow built from the folder, so Prefect has an importable
entrypoint: a flow made by ``folder_to_flow`` inside a function cannot be deployed by reference)
and ``PATH/prefect.yaml`` (entrypoint ``flow.py:flow``, parameters, schedule, work pool and tags
from the root task.yaml ``deploy:`` block, a pull step that installs ``dependencies:``), so that
plain ``prefect deploy`` inside the folder works. Prefect-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._process.files import read_regular
from ..errors import ConfigError
from ..workflow.config import Schedule
from ..workflow.names import slug
from ..workflow.tree import Workflow
from .dependencies import collect_dependencies

FLOW_FILE = "flow.py"
PROJECT_FILE = "prefect.yaml"
ENTRYPOINT = f"{FLOW_FILE}:flow"
INSTALL_STEP = "prefect_folpipe.deploy.steps.install_dependencies"
PROJECT_STEP = "prefect_folpipe.deploy.steps.project_directory"
PROJECT_DIRECTORY = "{{ project.directory }}"
"""The folder ``prefect deploy`` ran in, from the build step (prefect.yaml has no absolute
path, so it can be committed and deployed from any checkout)."""
WORKDIR_STEP = "prefect.deployments.steps.set_working_directory"
CONTAINER_POOL_TYPES = frozenset(
    {"docker", "kubernetes", "ecs", "cloud-run", "azure-container-instance"}
)

FLOW_PY = '''"""Prefect entrypoint of this workflow folder (written by `folpipe deploy init`).

`prefect deploy` and workers load `flow.py:flow`; the folder is read again at every run.
"""

from pathlib import Path

from prefect_folpipe import folder_to_flow

flow = folder_to_flow(Path(__file__).parent)
'''


def default_deployment_name(workflow: Workflow) -> str:
    """A deployment's name when none is given: the root ``deploy.name``, else the workflow's
    name as a slug."""
    deploy = workflow.root.config.deploy
    return deploy.name if deploy and deploy.name else project_slug(workflow)


def project_slug(workflow: Workflow) -> str:
    """The workflow's name as lowercase letters, digits and dashes."""
    return slug(workflow.name, limit=200, empty="workflow")


def workflow_tags(workflow: Workflow, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Tags put on every deployment of the workflow (and so on its flow runs)."""
    deploy = workflow.root.config.deploy
    declared = list(deploy.tags) if deploy else []
    return list(dict.fromkeys(["folpipe", f"workflow:{workflow.name}", *declared, *extra]))


def schedule_entry(schedule: Schedule) -> dict[str, Any]:
    """A ``schedules:`` entry of prefect.yaml for one folpipe schedule."""
    entry: dict[str, Any] = {}
    for key in ("cron", "interval", "rrule", "timezone"):
        value = getattr(schedule, key)
        if value is not None:
            entry[key] = value
    return entry


def pull_steps(workflow: Workflow, *, directory: str | None = None) -> list[dict[str, Any]]:
    """Set the working directory to the workflow, then install its dependencies (if any)."""
    steps: list[dict[str, Any]] = [
        {WORKDIR_STEP: {"directory": directory or str(workflow.root_dir.resolve())}}
    ]
    if collect_dependencies(workflow):
        steps.append({INSTALL_STEP: {"path": "."}})
    return steps


def dependency_job_variables(workflow: Workflow, pool_type: str | None) -> dict[str, Any]:
    """``EXTRA_PIP_PACKAGES`` for container pools (the Prefect image installs them at start)."""
    packages = collect_dependencies(workflow)
    if not packages or pool_type not in CONTAINER_POOL_TYPES:
        return {}
    return {"env": {"EXTRA_PIP_PACKAGES": " ".join(packages)}}


@dataclass
class ProjectOptions:
    """What ``deploy init`` writes besides what the root task.yaml says."""

    name: str | None = None
    pool: str | None = None
    pool_type: str | None = None
    schedule: Schedule | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


def deployment_entry(workflow: Workflow, options: ProjectOptions) -> dict[str, Any]:
    """One entry of prefect.yaml's ``deployments:`` list."""
    deploy = workflow.root.config.deploy
    entry: dict[str, Any] = {
        "name": options.name or default_deployment_name(workflow),
        "entrypoint": ENTRYPOINT,
        "description": workflow.root.config.description or f"folpipe workflow {workflow.name}",
        "tags": workflow_tags(workflow, options.tags),
        "parameters": {**(deploy.parameters if deploy else {}), **options.parameters},
    }
    pool = options.pool or (deploy.work_pool if deploy else None)
    if pool:
        job_variables = dependency_job_variables(workflow, options.pool_type)
        entry["work_pool"] = {"name": pool, "job_variables": job_variables}
    schedule = options.schedule or (deploy.schedule if deploy else None)
    entry["schedules"] = [schedule_entry(schedule)] if schedule else []
    return entry


def project_document(workflow: Workflow, options: ProjectOptions) -> dict[str, Any]:
    """The whole prefect.yaml as data."""
    from importlib.metadata import version

    return {
        "name": project_slug(workflow),
        "prefect-version": version("prefect"),
        "build": [{PROJECT_STEP: {"id": "project"}}],
        "push": None,
        "pull": pull_steps(workflow, directory=PROJECT_DIRECTORY),
        "deployments": [deployment_entry(workflow, options)],
    }


def render_project(workflow: Workflow, options: ProjectOptions) -> str:
    """prefect.yaml text with a header saying where it came from and how to use it."""
    header = (
        f"# Prefect project of the folpipe workflow {workflow.name!r}"
        " (written by `folpipe deploy init`).\n"
        "# Deploy from this folder with `prefect deploy --all` (add `--pool NAME` when no\n"
        "# work_pool is set), or with `folpipe deploy .`. Edit freely; re-run\n"
        "# `folpipe deploy init --force` after changing the root task.yaml `deploy:` block.\n"
    )
    body = yaml.safe_dump(project_document(workflow, options), sort_keys=False, width=100)
    return header + body


@dataclass(frozen=True)
class WrittenProject:
    """Files written by :func:`write_project` (``None`` when already up to date)."""

    flow_file: Path | None
    project_file: Path | None


def _write(target: Path, text: str, *, force: bool) -> Path | None:
    if target.exists():
        try:
            same = read_regular(target).decode("utf-8") == text
        except (OSError, UnicodeDecodeError):  # a FIFO or a folder there: not ours to keep
            same = False
        if same:
            return None
        if not force:
            raise ConfigError(
                f"{target} already exists and differs from what folpipe would write",
                code="FP617",
                hint="pass --force to overwrite it, or edit it by hand",
            )
    target.write_text(text, encoding="utf-8")
    return target


def write_flow_file(root: Path, *, force: bool = False) -> Path | None:
    """Write ``root/flow.py`` (the per-workflow entrypoint); ``None`` if already identical."""
    return _write(root / FLOW_FILE, FLOW_PY, force=force)


def ensure_flow_file(root: Path) -> Path | None:
    """Write ``root/flow.py`` when missing; an existing one (maybe customised) is kept."""
    return None if (root / FLOW_FILE).exists() else write_flow_file(root)


def write_project(
    workflow: Workflow, options: ProjectOptions, *, force: bool = False
) -> WrittenProject:
    """Write flow.py and prefect.yaml into the workflow folder."""
    root = workflow.root_dir
    flow_file = write_flow_file(root, force=force)
    project_file = _write(root / PROJECT_FILE, render_project(workflow, options), force=force)
    return WrittenProject(flow_file, project_file)
