"""``folpipe test``: run a workflow's test cases (``folpipe test PATH``, the default) or record
one from a run (``folpipe test record PATH --name NAME``)."""

from __future__ import annotations

from typing import Any

import click

from . import _record
from . import run_cases as test

SUBCOMMANDS = ("run", "record")


class CasesGroup(click.Group):
    """A group whose first word may be the path: ``folpipe test PATH`` means ``test run PATH``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in SUBCOMMANDS and args[0] not in ("-h", "--help")):
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "PATH [OPTIONS] | record PATH --name NAME")


@click.group(name="test", cls=CasesGroup, invoke_without_command=False)
def command() -> None:
    """Run a workflow's test cases (PATH), or record one from a run (record PATH --name).

    Options of `folpipe test PATH`: --json, -k TEXT, -v, --repeat N, --min-pass F (see `folpipe
    test run --help`)."""


command.add_command(test.command, "run")
command.add_command(_record.command, "record")
