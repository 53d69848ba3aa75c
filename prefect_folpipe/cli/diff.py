"""``folpipe diff [PATH] RUN_A RUN_B [--json]``: what changed between two recorded runs.

Runs are named as ``_runref`` says (record or flow run id, ``latest``, ``previous``; without
names: ``previous`` and ``latest``) and read from the workflow's run records (PATH, or
``--path``, default the current folder). Per task: ran, restored from a checkpoint or skipped
on each side; which of its outputs changed (its declared output keys and its answer under its
name, each with a short diff); paid calls, tokens and cost on each side; then the totals. Exit
0, or 2 when a run cannot be found.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from ._render import get_console, handle_errors, print_json
from ._runref import find_run

SHORT = 60
"""Characters of a value shown either side of a change."""


def output_keys(workflow: Any) -> dict[str, list[str]]:
    """Per task path, the context keys holding its outputs (its name, then declared keys)."""
    keys: dict[str, list[str]] = {}
    for task in workflow.tasks():
        if task.path:
            keys[task.path] = [task.name, *(k for k in task.config.output_keys if k != task.name)]
    return keys


def value_diff(old: Any, new: Any) -> str:
    """A short account of how a value changed: the first changed lines of a text, else both
    values cut short."""
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        lines = [
            line
            for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")
        ]
        return " ".join(_cut(line) for line in lines[:4]) + (" …" if len(lines) > 4 else "")
    return f"{_cut(_show(old))} → {_cut(_show(new))}"


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def _rows(record: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("path")): r for r in record.get("tasks") or [] if isinstance(r, dict)}


def _side(row: Mapping[str, Any] | None) -> dict[str, Any]:
    row = row or {}
    usage = row.get("usage") or {}
    status = str(row.get("status") or "absent")
    return {
        "status": status,
        "ran": status in ("completed", "failed"),
        "model_calls": int(row.get("model_calls") or 0),
        "tokens": int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0),
        "cost_usd": float(row.get("cost_usd") or 0.0),
    }


def compare(
    a: Mapping[str, Any], b: Mapping[str, Any], keys: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """The diff document of runs ``a`` and ``b`` (run records)."""
    rows_a, rows_b = _rows(a), _rows(b)
    ctx_a, ctx_b = a.get("final_context") or {}, b.get("final_context") or {}
    paths = [p for p in [*rows_a, *(p for p in rows_b if p not in rows_a)] if p]
    tasks = []
    owned: set[str] = set()
    for path in paths:
        changed = {}
        for key in keys.get(path, ()):
            owned.add(key)
            if ctx_a.get(key) != ctx_b.get(key):
                changed[key] = value_diff(ctx_a.get(key), ctx_b.get(key))
        tasks.append(
            {
                "path": path,
                "a": _side(rows_a.get(path)),
                "b": _side(rows_b.get(path)),
                "changed": changed,
            }
        )
    other = {
        key: value_diff(ctx_a.get(key), ctx_b.get(key))
        for key in sorted({*ctx_a, *ctx_b} - owned)
        if not key.startswith("_") and ctx_a.get(key) != ctx_b.get(key)
    }
    return {
        "a": _run(a),
        "b": _run(b),
        "tasks": tasks,
        "context_changed": other,
        "totals": {side: _totals([t[side] for t in tasks]) for side in ("a", "b")},
    }


def _run(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "run": str(record.get("name", "")).removesuffix(".json"),
        "flow_run_id": record.get("flow_run_id"),
        "status": record.get("status"),
        "started_at": record.get("started_at"),
    }


def _totals(sides: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ran": sum(s["ran"] for s in sides),
        "cached": sum(s["status"] == "cached" for s in sides),
        "model_calls": sum(s["model_calls"] for s in sides),
        "tokens": sum(s["tokens"] for s in sides),
        "cost_usd": round(sum(s["cost_usd"] for s in sides), 6),
    }


def _print(document: Mapping[str, Any]) -> None:
    console = get_console()
    a, b = document["a"], document["b"]
    table = Table(title=f"folpipe diff {a['run']} ({a['status']}) → {b['run']} ({b['status']})")
    for column in ("task", "A", "B", "calls A/B", "tokens A/B", "cost A/B", "changed outputs"):
        table.add_column(column, overflow="fold")
    for task in document["tasks"]:
        sa, sb = task["a"], task["b"]
        changed = "\n".join(f"{k}: {v}" for k, v in task["changed"].items()) or "-"
        table.add_row(
            escape(task["path"]),
            sa["status"],
            sb["status"],
            f"{sa['model_calls']}/{sb['model_calls']}",
            f"{sa['tokens']}/{sb['tokens']}",
            f"${sa['cost_usd']:.4f}/${sb['cost_usd']:.4f}",
            escape(changed),
        )
    console.print(table)
    ta, tb = document["totals"]["a"], document["totals"]["b"]
    console.print(
        f"A: {ta['ran']} ran, {ta['cached']} from checkpoints, {ta['model_calls']} paid calls, "
        f"{ta['tokens']} tokens, ${ta['cost_usd']:.4f} · B: {tb['ran']} ran, {tb['cached']} "
        f"from checkpoints, {tb['model_calls']} paid calls, {tb['tokens']} tokens, "
        f"${tb['cost_usd']:.4f}",
        markup=False,
        highlight=False,
    )
    for key, change in document["context_changed"].items():
        console.print(f"context {key}: {change}", markup=False, highlight=False)


def split_args(args: Sequence[str], path: Path | None) -> tuple[Path, str, str]:
    """``[PATH] [RUN_A RUN_B]``: the workflow folder and the two runs."""
    names = list(args)
    if names and (Path(names[0]) / "task.yaml").is_file() and path is None:
        path = Path(names.pop(0))
    if len(names) not in (0, 2):
        raise click.UsageError("name two runs (or none: previous and latest)")
    first, second = names or ["previous", "latest"]
    return (path or Path(".")), first, second


@click.command(name="diff")
@click.argument("args", nargs=-1)
@click.option(
    "--path",
    "-p",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The workflow folder (default: the current folder).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (for CI).")
def command(args: tuple[str, ...], path: Path | None, as_json: bool) -> None:
    """Compare two runs: RUN_A RUN_B are record or flow run ids, latest or previous."""
    from ..validate import load_workflow

    root, first, second = split_args(args, path)
    with handle_errors(json_output=as_json, root=root):
        workflow = load_workflow(root)
        a = find_run(Path(workflow.root_dir), first)
        b = find_run(Path(workflow.root_dir), second)
        document = compare(a, b, output_keys(workflow))
    if as_json:
        print_json(document)
    else:
        _print(document)
