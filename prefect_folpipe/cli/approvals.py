"""``folpipe approvals PATH``: the gates waiting across a workflow's runs;
``folpipe approvals answer RUN [TARGET] KEY=VALUE ...``: answer one through the API."""

from __future__ import annotations

import asyncio

import click
from rich.table import Table

from ._approve import parse_approvals
from ._render import get_console, handle_errors, print_json


@click.command(name="approvals")
@click.argument("words", nargs=-1, required=True)
@click.option("--limit", "-l", default=50, show_default=True, help="How many recent runs to read.")
@click.option("--json", "as_json", is_flag=True, help='Print {"workflow", "waiting": [...]}.')
def command(words: tuple[str, ...], limit: int, as_json: bool) -> None:
    """List the approval gates waiting in the runs of the workflow folder PATH (run, task or
    tool, question, waiting since, deadline), or, with `answer RUN [TARGET] KEY=VALUE ...`,
    answer the gate waiting in RUN (flow run id or name; values typed like --approve)."""
    if words[0] == "answer":
        _answer(words[1:], as_json)
    elif len(words) == 1:
        _list(words[0], limit, as_json)
    else:
        raise click.UsageError("use: folpipe approvals PATH, or approvals answer RUN KEY=VALUE")


def _list(path: str, limit: int, as_json: bool) -> None:
    from ..deploy.approvals import waiting_gates
    from ..deploy.options import load

    with handle_errors(json_output=as_json):
        workflow = load(path)
        gates = asyncio.run(waiting_gates(workflow, limit=limit))
    if as_json:
        print_json({"workflow": workflow.name, "waiting": [gate.to_dict() for gate in gates]})
        return
    console = get_console()
    if not gates:
        console.print(f"no approval waits in the runs of {workflow.name}")
        return
    table = Table(title=f"Approvals waiting in {workflow.name}", title_justify="left")
    for column in ("flow run", "run id", "task or tool", "question", "waiting since", "deadline"):
        table.add_column(column, overflow="fold")
    for gate in gates:
        table.add_row(
            gate.run_name,
            gate.flow_run_id,
            gate.target,
            gate.question,
            (gate.waiting_since or "")[:19].replace("T", " "),
            (gate.deadline or "")[:19].replace("T", " "),
        )
    console.print(table)


def _answer(words: tuple[str, ...], as_json: bool) -> None:
    from ..deploy.approvals import answer_gate

    if not words:
        raise click.UsageError("use: folpipe approvals answer RUN [TARGET] KEY=VALUE ...")
    run, rest = words[0], words[1:]
    target = rest[0] if rest and "=" not in rest[0] else None
    pairs = rest[1:] if target is not None else rest
    if not pairs:
        raise click.UsageError("give the answer as KEY=VALUE, e.g. approved=yes")
    with handle_errors(json_output=as_json):
        gate = asyncio.run(answer_gate(run, target, parse_approvals(pairs).get("", {})))
    if as_json:
        print_json({"answered": gate.to_dict()})
        return
    get_console().print(f"answered {gate.target!r} in {gate.run_name}: the run is resumed")
