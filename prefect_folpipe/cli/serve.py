"""``folpipe serve``: serve a workflow on this machine with Prefect's ``serve`` (no work pool).

Runs are triggered by the schedule (``--cron`` / ``--interval`` / ``--rrule`` or the root
task.yaml ``deploy.schedule``), by ``prefect deployment run`` or from the UI; each executes in a
subprocess of this command. Stop it with Ctrl+C.
"""

from __future__ import annotations

import asyncio
from typing import Any

import click

from ._render import get_console, handle_errors
from .deploy import schedule_options


@click.command(name="serve")
@click.argument("path")
@click.option(
    "--name", "-n", help="Deployment name (default: <deploy.name or the workflow>-serve)."
)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Default parameter.")
@click.option("--generic", is_flag=True, help="Serve prefect_folpipe.flows:run_workflow_folder.")
@click.option("--limit", type=int, help="Maximum number of concurrent runs.")
@click.option("--skip-deps", is_flag=True, help="Do not install the workflow's dependencies.")
@schedule_options
def command(
    path: str,
    name: str | None,
    params: tuple[str, ...],
    generic: bool,
    limit: int | None,
    skip_deps: bool,
    **schedule: Any,
) -> None:
    """Serve the workflow folder PATH until interrupted."""
    from ..deploy.dependencies import collect_dependencies, install
    from ..deploy.options import (
        deployment_name,
        deployment_parameters,
        load,
        parse_params,
        resolve_schedule,
    )

    console = get_console(stderr=True)
    with handle_errors():
        workflow = load(path)
        chosen = resolve_schedule(
            workflow,
            cron=schedule["cron"],
            interval=schedule["interval"],
            rrule=schedule["rrule"],
            timezone=schedule["timezone"],
            use_declared=not schedule["no_schedule"],
        )
        parameters = deployment_parameters(workflow, parse_params(params), generic=generic)
        if not skip_deps and (packages := collect_dependencies(workflow)):
            console.print(f"installing dependencies: {' '.join(packages)}")
            install(packages)
        from ..compile.infra import ensure_api  # imports Prefect: after the checks
        from ..deploy.serve import check_not_a_pool_deployment, serve, serve_deployment, serve_name

        chosen_name = deployment_name(workflow, serve_name(workflow, name))
        ensure_api(lambda line: console.print(line, style="dim", soft_wrap=True))
        deployment = serve_deployment(
            workflow,
            name=chosen_name,
            schedule=chosen,
            parameters=parameters,
            generic=generic,
        )
        asyncio.run(check_not_a_pool_deployment(deployment.flow_name, chosen_name))
    serve(deployment, limit=limit)
