"""``folpipe deploy``: create a Prefect deployment of a workflow folder; ``deploy init`` writes
``flow.py`` + ``prefect.yaml`` so that plain ``prefect deploy`` works in the folder.

``folpipe deploy PATH ...`` is routed to the hidden ``create`` subcommand, so ``init`` and a
folder path can share the command name. Bad input (missing folder, invalid schedule, unknown
work pool, no server) is a coded FP6xx error with a hint, exit code 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import click

from ._render import get_console, handle_errors, print_json

SUBCOMMANDS = ("init", "create")


class DeployGroup(click.Group):
    """``folpipe deploy PATH`` means ``folpipe deploy create PATH``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in SUBCOMMANDS and args[0] not in ("-h", "--help"):
            args = ["create", *args]
        return super().parse_args(ctx, args)


def schedule_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--cron / --interval / --rrule / --timezone (override the root task.yaml schedule)."""
    decorators = [
        click.option("--cron", help="Cron schedule, e.g. '0 3 * * *'."),
        click.option("--interval", type=float, help="Run every N seconds."),
        click.option("--rrule", help="RFC 5545 recurrence rule, e.g. 'FREQ=DAILY;BYHOUR=3'."),
        click.option("--timezone", help="IANA timezone of the schedule (default UTC)."),
        click.option(
            "--no-schedule", is_flag=True, help="Ignore the schedule in the root task.yaml."
        ),
    ]
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Name, pool, parameters and tags shared by ``create`` and ``init``."""
    decorators = [
        click.argument("path"),
        click.option("--name", "-n", help="Deployment name (default: deploy.name or workflow)."),
        click.option("--pool", "-p", help="Work pool (default: deploy.work_pool)."),
        click.option(
            "--param", "params", multiple=True, metavar="KEY=VALUE", help="Default parameter."
        ),
        click.option("--tag", "tags", multiple=True, help="Extra tag (repeatable)."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
    ]
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return schedule_options(fn)


@click.group(
    name="deploy", cls=DeployGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
def command() -> None:
    """Create a Prefect deployment of a workflow folder.

    \b
    folpipe deploy PATH --name N [--pool P] [--cron C | --interval S] [--param k=v]...
    folpipe deploy init PATH [--pool P] ...   write flow.py + prefect.yaml for `prefect deploy`
    """


@command.command(name="create", hidden=True)
@common_options
@click.option("--generic", is_flag=True, help="Deploy prefect_folpipe.flows:run_workflow_folder.")
@click.option("--paused", is_flag=True, help="Create the deployment with schedules paused.")
def create(
    path: str,
    name: str | None,
    pool: str | None,
    params: tuple[str, ...],
    tags: tuple[str, ...],
    as_json: bool,
    generic: bool,
    paused: bool,
    **schedule: Any,
) -> None:
    """Create or update the deployment of the workflow folder PATH through the Prefect API."""
    from ..deploy.options import (
        DeployRequest,
        deployment_name,
        deployment_parameters,
        load,
        parse_params,
        resolve_pool,
    )

    with handle_errors(json_output=as_json):
        workflow = load(path, import_tools=False)  # reads, never runs, its code
        request = DeployRequest(
            name=deployment_name(workflow, name),
            pool=pool,
            schedule=_schedule(workflow, schedule),
            parameters=deployment_parameters(workflow, parse_params(params), generic=generic),
            tags=tags,
            generic=generic,
            paused=paused,
        )
        resolve_pool(workflow, pool)
        from ..deploy.api import create_deployment  # imports Prefect: only after the checks

        result = asyncio.run(create_deployment(workflow, request))
    if as_json:
        print_json(result.to_dict())
        return
    console = get_console()
    if result.flow_file:
        console.print(f"wrote {result.flow_file}")
    console.print(f"[green]✓[/] deployment [bold]{result.full_name}[/] on pool {result.work_pool}")
    if result.schedule:
        console.print(f"  schedule: {schedule_text(result.schedule)}", highlight=False)
    for automation in result.automations:
        console.print(f"  automation: {automation}", highlight=False)
    console.print(f"  run it:   prefect deployment run '{result.full_name}'")
    console.print(f"  worker:   prefect worker start --pool '{result.work_pool}'")


def schedule_text(schedule: Mapping[str, Any]) -> str:
    """A schedule as people write it: ``0 3 * * *``, ``every 60 s``, an RRULE; its time zone
    in brackets when one is set."""
    if schedule.get("cron"):
        text = str(schedule["cron"])
    elif schedule.get("interval") is not None:
        seconds = float(schedule["interval"])
        text = f"every {int(seconds) if seconds.is_integer() else seconds} s"
    else:
        text = str(schedule.get("rrule") or "")
    zone = schedule.get("timezone")
    return f"{text} ({zone})" if zone else text


def _schedule(workflow: Any, options: dict[str, Any]) -> Any:
    from ..deploy.options import resolve_schedule

    return resolve_schedule(
        workflow,
        cron=options["cron"],
        interval=options["interval"],
        rrule=options["rrule"],
        timezone=options["timezone"],
        use_declared=not options["no_schedule"],
    )


@command.command(name="init")
@common_options
@click.option(
    "--pool-type",
    default="process",
    show_default=True,
    help="Work pool type (docker/kubernetes get EXTRA_PIP_PACKAGES).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing flow.py / prefect.yaml.")
def init(
    path: str,
    name: str | None,
    pool: str | None,
    params: tuple[str, ...],
    tags: tuple[str, ...],
    as_json: bool,
    pool_type: str,
    force: bool,
    **schedule: Any,
) -> None:
    """Write PATH/flow.py and PATH/prefect.yaml so that `prefect deploy` works in PATH."""
    from ..deploy.options import deployment_parameters, load, parse_params
    from ..deploy.project import ProjectOptions, write_project

    with handle_errors(json_output=as_json):
        workflow = load(path, import_tools=False)  # reads, never runs, its code
        options = ProjectOptions(
            name=name,
            pool=pool,
            pool_type=pool_type,
            schedule=_schedule(workflow, schedule),
            parameters=deployment_parameters(workflow, parse_params(params), generic=False),
            tags=list(tags),
        )
        written = write_project(workflow, options, force=force)
    files = [str(f) for f in (written.flow_file, written.project_file) if f]
    if as_json:
        print_json({"written": files, "root": str(workflow.root_dir)})
        return
    console = get_console()
    for file in files:
        console.print(f"wrote {file}")
    if not files:
        console.print("flow.py and prefect.yaml are up to date")
    pool_hint = "" if (pool or _declared_pool(workflow)) else " --pool <work pool>"
    console.print(f"deploy with: cd {workflow.root_dir} && prefect deploy --all{pool_hint}")


def _declared_pool(workflow: Any) -> str | None:
    deploy = workflow.root.config.deploy
    return deploy.work_pool if deploy else None
