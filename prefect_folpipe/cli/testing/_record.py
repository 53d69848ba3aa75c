"""``folpipe test record PATH --name NAME [--run RUN]``: turn a recorded run into a test case.

The case file ``tests/NAME.yaml`` holds the run's initial context, every model answer of the
run's agent passes with the fingerprint of the request it answered (``_strict``), and
expectations taken from the run: its status, its final context, which tasks ran and which
were skipped, the tool calls the model made. Results of tools that are not ``replay: safe``
are in the recorded requests (the tool-results messages) and are replayed from there.
Secrets are masked and the workflow's folder is written as ``<workflow>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from ..._process.wording import plural
from ...compile.history import read_passes
from ...errors import ConfigError
from ...providers.replay import Normalizer
from ...redaction import SECRETS
from ...workflow.names import slug
from ...workflow.tree import Workflow
from .._render import get_console, handle_errors
from .._runref import find_run, finished_runs
from ._cases_file import TESTS_DIR
from ._strict import conversation, request_fingerprint, view


def recorded_passes(root: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The agent passes of ``run``: its own, and for tasks it restored from checkpoints,
    those of the latest earlier run that ran them."""
    own = read_passes(root, run["name"])
    have = {p.get("path") for p in own}
    restored = [
        str(row.get("path"))
        for row in run.get("tasks") or []
        if row.get("status") == "cached" and row.get("path") not in have
    ]
    earlier: list[dict[str, Any]] = []
    for record in reversed([r for r in finished_runs(root) if r["name"] < run["name"]]):
        if not restored:
            break
        found = [p for p in read_passes(root, record["name"]) if p.get("path") in restored]
        for path in {p.get("path") for p in found}:
            restored.remove(str(path))
        earlier += found
    return earlier + own


def pass_case(entry: Mapping[str, Any], normal: Normalizer) -> dict[str, Any]:
    """One recorded pass: system prompt and its calls, each with its request's fingerprint."""
    system = str(entry.get("system") or "")
    recorded: dict[str, Any] = {
        "phase": entry.get("phase", "single"),
        "iteration": list(entry.get("iteration") or []),
        "system": system,
        "calls": [],
    }
    pending: list[dict[str, Any]] = []
    for message in entry.get("transcript") or []:
        if message.get("role") != "assistant":
            pending.append(dict(message))
            continue
        answer = {"text": message.get("text", ""), "tool_calls": message.get("tool_calls") or []}
        recorded["calls"].append({"fingerprint": "", "request": pending, "answer": answer})
        pending = []
    for index, call in enumerate(recorded["calls"]):
        call["fingerprint"] = request_fingerprint(
            view(system, conversation(recorded, index), normal)
        )
    return recorded


def build_case(workflow: Workflow, run: Mapping[str, Any], name: str) -> dict[str, Any]:
    root = Path(workflow.root_dir)
    normal = Normalizer(root)
    passes = recorded_passes(root, run)
    if not passes and any(task.runs_agent for task in workflow.tasks()):
        raise ConfigError(
            f"run {run['name'].removesuffix('.json')} kept no model calls to record (it ran "
            "elsewhere, e.g. on a deployment's worker, or before runs kept them)",
            code="FP183",
            hint="run the workflow here (folpipe run PATH), then record it",
        )
    by_task: dict[str, list[dict[str, Any]]] = {}
    tool_calls: list[dict[str, Any]] = []
    for entry in passes:
        recorded = pass_case(entry, normal)
        by_task.setdefault(str(entry.get("path")), []).append(recorded)
        for call in recorded["calls"]:
            for made in call["answer"]["tool_calls"]:
                arguments = made.get("arguments") or {}
                tool_calls.append(
                    {"task": entry.get("path"), "name": made.get("name"), "arguments": arguments}
                )
    rows = [r for r in run.get("tasks") or [] if isinstance(r, dict) and r.get("path")]
    expect: dict[str, Any] = {
        "status": "failed" if run.get("status") != "completed" else "completed"
    }
    final = {
        k: v for k, v in (run.get("final_context") or {}).items() if not str(k).startswith("_")
    }
    if final:
        expect["context"] = final
    expect["ran"] = [r["path"] for r in rows if r.get("status") in ("completed", "cached")]
    skipped = [r["path"] for r in rows if r.get("status") == "skipped"]
    if skipped:
        expect["skipped"] = skipped
    if tool_calls:
        expect["tool_calls"] = tool_calls
    case = {
        "name": name,
        "recorded_from": run["name"].removesuffix(".json"),
        "context": run.get("context") or {},
        "recorded": by_task,
        "expect": expect,
    }
    return SECRETS.data(normal.data(case))


class _Literal(yaml.SafeDumper):
    """Multi-line strings as ``|`` blocks: prompts and answers stay readable in review."""


def _str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Literal.add_representer(str, _str)


def dump(case: Mapping[str, Any]) -> str:
    head = (
        "# Recorded by `folpipe test record`: replayed strictly by `folpipe test` (a model\n"
        "# request that differs from the recorded one fails the case). Review, then commit.\n"
    )
    body = yaml.dump(
        {"cases": [dict(case)]}, Dumper=_Literal, sort_keys=False, allow_unicode=True, width=100
    )
    return head + body


def write_case(root: Path, name: str, case: Mapping[str, Any]) -> Path:
    target = root / TESTS_DIR / f"{slug(name) or 'recorded'}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump(case), encoding="utf-8")
    return target


@click.command(name="record")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", "name", required=True, help="The case's name (and file name).")
@click.option("--run", "run_ref", default=None, help="Run to record (default: the latest).")
def command(path: Path, name: str, run_ref: str | None) -> None:
    """Write tests/NAME.yaml from a recorded run of the workflow at PATH."""
    from ...validate import load_workflow

    with handle_errors(json_output=False, root=path):
        workflow = load_workflow(path)
        run = find_run(Path(workflow.root_dir), run_ref)
        case = build_case(workflow, run, name)
        target = write_case(Path(workflow.root_dir), name, case)
    calls = sum(len(p["calls"]) for found in case["recorded"].values() for p in found)
    get_console().print(
        f"wrote {target} ({plural(calls, 'model answer')} of "
        f"{plural(len(case['recorded']), 'task')}, "
        f"from run {case['recorded_from']})",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
