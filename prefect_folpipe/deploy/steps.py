"""Deployment steps usable from ``prefect.yaml`` (``pull:`` section).

```yaml
pull:
  - prefect.deployments.steps.set_working_directory: {directory: /srv/workflows/report}
  - prefect_folpipe.deploy.steps.install_dependencies: {path: .}
```

The step runs in the flow-run process, before the flow is loaded, on any worker type whose
environment has prefect-folpipe installed; it re-reads the workflow, so the installed set always
matches the task.yaml files being run.
"""

from __future__ import annotations

from pathlib import Path

from .dependencies import collect_dependencies, dedupe, install


def install_dependencies(path: str = ".", packages: list[str] | None = None) -> dict[str, object]:
    """Install the workflow's ``dependencies:`` (plus ``packages``) into the running interpreter."""
    from ..validate import load_workflow

    wanted = dedupe([*collect_dependencies(load_workflow(Path(path))), *(packages or [])])
    command = install(wanted)
    return {"packages": wanted, "command": " ".join(command)}
