"""The ``folpipe`` command line: thin commands over the public API.

Commands are imported lazily, so ``folpipe validate`` never pays for importing Prefect.
Each lives in its own module as a click command named ``command``.
"""

from __future__ import annotations

import atexit
import gc
import importlib
from typing import Any

import click

COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("prefect_folpipe.cli.validate", "Check a workflow folder and list every problem."),
    "tree": ("prefect_folpipe.cli.tree", "Show the resolved task tree, settings and tools."),
    "graph": ("prefect_folpipe.cli.graph", "Draw the task tree (ASCII or Mermaid)."),
    "init": ("prefect_folpipe.cli.init", "Scaffold a new workflow folder."),
    "schema": ("prefect_folpipe.cli.schema", "Print the JSON Schema of task.yaml."),
    "run": ("prefect_folpipe.cli.run", "Run a workflow as a Prefect flow."),
    "run-task": ("prefect_folpipe.cli.run_task", "Run one task folder in its workflow."),
    "resume": ("prefect_folpipe.cli.resume", "Finish the latest run that did not complete."),
    "status": ("prefect_folpipe.cli.status", "List recent runs of a workflow."),
    "approvals": (
        "prefect_folpipe.cli.approvals",
        "List approval gates waiting in a workflow's runs, or answer one.",
    ),
    "deploy": ("prefect_folpipe.cli.deploy", "Create a Prefect deployment of a workflow."),
    "serve": ("prefect_folpipe.cli.serve", "Serve a workflow with Prefect's serve()."),
    "install-deps": ("prefect_folpipe.cli.install_deps", "Install every task's dependencies."),
    "plan": ("prefect_folpipe.cli.plan", "Show what a run would do (no model call)."),
    "test": (
        "prefect_folpipe.cli.testing.group",
        "Run a workflow's test cases; `test record` makes one from a run.",
    ),
    "diff": (
        "prefect_folpipe.cli.diff",
        "Compare two recorded runs: outputs, calls, tokens, cost.",
    ),
    "convert": (
        "prefect_folpipe.cli.convert",
        "Convert task.yaml + instructions.md to SKILL.md, or back.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        return importlib.import_module(entry[0]).command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="prefect-folpipe", prog_name="folpipe")
def cli() -> None:
    """Run agentic workflow folders as Prefect flows."""


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point."""
    _skip_final_collection()
    return cli.main(args=argv, prog_name="folpipe")


def _skip_final_collection() -> None:
    """At exit, move every object out of the garbage collector's reach. An interpreter's last
    act is one full collection over everything still alive (after ``folpipe validate`` of a
    1,000-task tree: ~0.1 s, a tenth of the command) that can free nothing the exit itself
    would not; exit handlers still run and objects are still finalized."""
    atexit.unregister(gc.freeze)  # once, however often main() runs in a process
    atexit.register(gc.freeze)
