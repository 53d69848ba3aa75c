"""Deployment steps usable from ``prefect.yaml``.

```yaml
build:
  - prefect_folpipe.deploy.steps.project_directory: {id: project}
pull:
  - prefect.deployments.steps.set_working_directory: {directory: "{{ project.directory }}"}
  - prefect_folpipe.deploy.steps.install_dependencies: {path: .}
```

``project_directory`` runs when ``prefect deploy`` runs (a build step, in the workflow folder),
so the committed file holds no absolute path: the deployment gets the folder it was deployed
from. ``install_dependencies`` runs in the flow-run process, before the flow is loaded, on any
worker type whose environment has prefect-folpipe installed; it re-reads the workflow, so the
installed set always matches the task.yaml files being run.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .dependencies import collect_dependencies, dedupe, install, missing


def project_directory(path: str = ".") -> dict[str, str]:
    """Build step: the absolute workflow folder ``prefect deploy`` runs in, as ``directory``
    (for the ``set_working_directory`` pull step). FP622 outside a workflow folder."""
    folder = Path(path).resolve()
    if not (folder / "flow.py").is_file():
        raise ConfigError(
            f"{folder} holds no flow.py: `prefect deploy` must run in the workflow folder",
            code="FP622",
            hint="cd into the folder that holds prefect.yaml and flow.py, then `prefect deploy`",
        )
    return {"directory": str(folder)}


def install_dependencies(path: str = ".", packages: list[str] | None = None) -> dict[str, object]:
    """Install the workflow's ``dependencies:`` (plus ``packages``) into the running interpreter:
    those it does not already satisfy, as ``folpipe run`` does (an installer started for
    requirements that are all met took a second or more of every flow run's start)."""
    from ..validate import load_workflow

    workflow = load_workflow(Path(path), import_tools=False)  # reads, never runs, its code
    wanted = dedupe([*collect_dependencies(workflow), *(packages or [])])
    command = install(missing(wanted))
    return {"packages": wanted, "command": " ".join(command)}
