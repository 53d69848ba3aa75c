"""Approval gates from the command line: ``--approve key=value`` answers ahead (CI), and a
terminal asks a person (the live view steps aside while it does)."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel

from ..errors import ConfigError
from ..workflow.approval import coerce_value, input_fields
from ..workflow.tree import Workflow

ATTEMPTS = 3


def parse_approvals(values: Iterable[str]) -> dict[str, dict[str, str]]:
    """``key=value`` (every gate with that key), ``task:key=value`` (one task, by name or
    path), ``tool:key=value`` or ``task/tool:key=value`` (a tool's calls) ->
    ``RunOptions.approvals``. Values stay text; each gate parses them by type. The same
    ``[task:]key`` twice is FP407 (which one was meant?)."""
    presets: dict[str, dict[str, str]] = {}
    for item in values:
        head, equals, value = item.partition("=")
        target, _, key = head.rpartition(":")
        if not equals or not key.strip():
            raise ConfigError(
                f"--approve {item!r} is not key=value",
                code="FP402",
                hint="write --approve approved=true, or --approve release/ship:approved=true",
            )
        given = presets.setdefault(target.strip(), {})
        if key.strip() in given:
            raise ConfigError(
                f"--approve gives {_shown(target.strip(), key.strip())} twice "
                f"({given[key.strip()]!r} and {value!r})",
                code="FP407",
                hint="give each key once (TASK:KEY=VALUE answers one task's gate only)",
            )
        given[key.strip()] = value
    return presets


def check_approvals(workflow: Workflow, presets: Mapping[str, Mapping[str, str]]) -> None:
    """FP407, before the run starts, naming every ``--approve`` value that no approval gate of
    ``workflow`` asks for (no enabled gate of that task, or none with that key)."""
    gates = []
    for task in workflow.tasks():
        if task.config.approval is not None:
            try:
                fields = input_fields(task.config.approval.input)
            except ValueError:  # FP166 at validation
                continue
            gates.append((task.path, fields))
    unused = [
        _shown(target, key)
        for target, answers in presets.items()
        for key in answers
        if not any(
            key in fields and (not target or target in (path, path.rsplit("/", 1)[-1]))
            for path, fields in gates
        )
    ]
    if not unused:
        return
    asked = "; ".join(f"{path or '(root)'}: {', '.join(fields)}" for path, fields in gates)
    raise ConfigError(
        f"--approve {', '.join(unused)}: no approval gate of the workflow asks for "
        f"{'it' if len(unused) == 1 else 'them'}",
        code="FP407",
        hint=f"the gates and their keys: {asked}" if gates else "the workflow has no gate",
    )


def _shown(target: str, key: str) -> str:
    return f"{target}:{key}" if target else key


class TerminalApprover:
    """Asks each gate's question on the terminal (stderr + stdin), one key at a time."""

    def __init__(self, console: Console, pause: Any = None) -> None:
        self.console = console
        self.pause = pause or contextlib.nullcontext
        self._lock = threading.Lock()

    def __call__(self, question: Any) -> dict[str, Any]:
        with self._lock, self.pause():
            self.console.print(
                Panel(question.prompt, title=f"approval · {question.label}", border_style="yellow")
            )
            return {key: self._ask(key, kind) for key, kind in question.fields.items()}

    def _ask(self, key: str, kind: Any) -> Any:
        label = f"{key} ({'/'.join(kind) if isinstance(kind, tuple) else _hint(kind)})"
        for _ in range(ATTEMPTS):
            text = click.prompt(label, default="", show_default=False, err=True)
            try:
                return coerce_value(key, kind, text)
            except ValueError as exc:
                self.console.print(f"[red]{exc}[/red]")
        raise click.Abort()


def _hint(kind: str) -> str:
    return {"bool": "yes/no", "list": "JSON list", "dict": "JSON object"}.get(kind, kind)


def terminal_approver(console: Console, pause: Any = None) -> TerminalApprover | None:
    """An approver when stdin is a terminal (else gates need --approve or a deployment)."""
    try:
        interactive = sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return TerminalApprover(console, pause) if interactive else None
