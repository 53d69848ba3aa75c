"""Rendering shared by every command: consoles, diagnostics tables, JSON, errors to exit codes.

Commands print through these helpers so that every author mistake looks the same everywhere: a
code, where it is, what is wrong and a hint, and never a Python traceback.

Exit codes (``folpipe`` as a whole): ``0`` success; ``1`` the workflow is invalid for
``validate`` / ``tree`` / ``graph``, or a run failed (``WorkflowFailed``, a task, tool or provider
error); ``2`` usage errors and, for commands that run a workflow, an invalid workflow or a
run-time configuration error (``ConfigError``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ..errors import ConfigError, Diagnostic, FolpipeError, Severity, WorkflowValidationError
from ..workflow.names import escape_controls

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_DURABLE = 3
"""The run completed, but a checkpoint or journal entry could not be written (FP541)."""

DEFAULT_PIPE_WIDTH = 120
"""Width used when output is not a terminal and ``COLUMNS`` is unset (logs, pipes, tests)."""


# --------------------------------------------------------------------------- output


class SafeConsole(Console):
    """A console that shows a control character in what it prints as an escape (``\\x1b``)
    instead of sending it to the terminal: a folder's text (a task's description, a tool's,
    an error's message) cannot clear the screen, set the window title or move the cursor.
    Rich's own cursor moves (a live view) are control segments and pass as they are."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(_printable(buffer))


def _printable(buffer: Iterable[Segment]) -> Iterator[Segment]:
    for segment in buffer:
        text = segment.text
        escaped = text if segment.control else escape_controls(text, keep_layout=True)
        yield segment if escaped is text else Segment(escaped, segment.style, segment.control)


def get_console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr); wide enough for tables when piped."""
    console = SafeConsole(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = DEFAULT_PIPE_WIDTH
    return console


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def dump_json(data: Any) -> str:
    """JSON text as every ``--json`` option prints it (indented, UTF-8, paths as strings)."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=_json_default)


def print_json(data: Any) -> None:
    """Print exactly one JSON document on stdout."""
    click.echo(dump_json(data))


# --------------------------------------------------------------------------- diagnostics


def split_diagnostics(
    diagnostics: Iterable[Diagnostic],
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """``(errors, warnings)`` in the order they were found."""
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    for diagnostic in diagnostics:
        (warnings if diagnostic.severity == Severity.WARNING else errors).append(diagnostic)
    return errors, warnings


def diagnostics_payload(diagnostics: Iterable[Diagnostic]) -> dict[str, Any]:
    """``{"ok", "errors", "warnings"}``: the JSON document of ``folpipe validate --json``."""
    errors, warnings = split_diagnostics(diagnostics)
    return {
        "ok": not errors,
        "errors": [diagnostic.to_dict() for diagnostic in errors],
        "warnings": [diagnostic.to_dict() for diagnostic in warnings],
    }


def display_file(file: str | None, root: Path | None = None) -> str:
    """A diagnostic's file, relative to the workflow folder when it lies inside it."""
    if not file:
        return ""
    if root is not None:
        try:
            return Path(file).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return file
    return file


def location(diagnostic: Diagnostic, root: Path | None = None) -> str:
    """``file:line`` (or just the file, or '' when the diagnostic has neither)."""
    where = display_file(diagnostic.file, root)
    if where and diagnostic.line:
        return f"{where}:{diagnostic.line}"
    return where


def task_label(task: str | None) -> str:
    """A diagnostic's task path for display (the root's path is ``""``)."""
    if task is None:
        return ""
    return task or "(root)"


def diagnostics_table(
    diagnostics: Sequence[Diagnostic], *, title: str, style: str, root: Path | None = None
) -> Table:
    """One row per diagnostic: code, file:line, task, and the message with its hint below."""
    table = Table(title=title, title_style=f"bold {style}", title_justify="left", expand=False)
    table.add_column("code", style=style, no_wrap=True)
    table.add_column("file:line", overflow="fold")
    table.add_column("task", overflow="fold")
    table.add_column("problem (hint)", ratio=1)
    for diagnostic in diagnostics:
        problem = Text(diagnostic.message)
        if diagnostic.hint:
            problem.append("\nhint: ", style="dim")
            problem.append(diagnostic.hint, style="italic")
        table.add_row(
            diagnostic.code,
            Text(location(diagnostic, root)),
            Text(task_label(diagnostic.task)),
            problem,
        )
    return table


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def print_diagnostics(
    diagnostics: Iterable[Diagnostic], console: Console, *, root: Path | None = None
) -> None:
    """Tables of errors and warnings (each only when non-empty), without a summary line."""
    errors, warnings = split_diagnostics(diagnostics)
    if errors:
        console.print(diagnostics_table(errors, title="Errors", style="red", root=root))
    if warnings:
        console.print(diagnostics_table(warnings, title="Warnings", style="yellow", root=root))


def summary_text(diagnostics: Iterable[Diagnostic], subject: str) -> Text:
    """``✓ subject is valid`` or ``✗ subject: 2 errors, 1 warning``."""
    errors, warnings = split_diagnostics(diagnostics)
    if errors:
        text = Text(f"✗ {subject}: {_plural(len(errors), 'error')}", style="bold red")
        if warnings:
            text.append(f", {_plural(len(warnings), 'warning')}", style="yellow")
        return text
    text = Text(f"✓ {subject} is valid", style="bold green")
    if warnings:
        text.append(f" ({_plural(len(warnings), 'warning')})", style="yellow")
    return text


# --------------------------------------------------------------------------- errors


def exit_code_for(exc: FolpipeError) -> int:
    """The exit code of a command that stopped on ``exc`` (see the module docstring)."""
    if isinstance(exc, WorkflowValidationError | ConfigError):
        return EXIT_USAGE
    return EXIT_FAILED


def error_payload(exc: FolpipeError) -> dict[str, Any]:
    """JSON document for a command that stopped on ``exc``: ``ok``, ``error`` and diagnostics."""
    diagnostics = exc.diagnostics if isinstance(exc, WorkflowValidationError) else []
    payload = diagnostics_payload(diagnostics)
    payload["ok"] = False
    payload["error"] = {
        "code": exc.code,
        "type": type(exc).__name__,
        "message": _headline(exc),
        "hint": getattr(exc, "hint", None),
    }
    return payload


def _headline(exc: FolpipeError) -> str:
    if isinstance(exc, WorkflowValidationError):
        errors, _ = split_diagnostics(exc.diagnostics)
        return f"the workflow has {_plural(len(errors), 'error')}"
    return str(exc) or type(exc).__name__


def print_error(exc: FolpipeError, console: Console, *, root: Path | None = None) -> None:
    """Human rendering of ``exc``: the diagnostics table, or ``error CODE: message`` + hint."""
    if isinstance(exc, WorkflowValidationError):
        print_diagnostics(exc.diagnostics, console, root=root)
        subject = str(root) if root is not None else "workflow"
        console.print(summary_text(exc.diagnostics, subject))
        return
    line = Text(f"error {exc.code}: ", style="bold red")
    line.append(_headline(exc))
    console.print(line)
    hint = getattr(exc, "hint", None)
    if hint:
        console.print(Text(f"hint: {hint}", style="italic"))


@contextmanager
def handle_errors(
    *,
    json_output: bool = False,
    root: Path | None = None,
    validation_exit_code: int = EXIT_USAGE,
) -> Iterator[None]:
    """Turn a ``FolpipeError`` raised inside into a clear message and an exit code.

    Usable as ``with handle_errors(...):`` or as a decorator. With ``json_output`` the error is
    printed as one JSON document on stdout (:func:`error_payload`); otherwise it goes to stderr.
    ``validation_exit_code`` lets inspection commands (``tree``, ``graph``) exit 1 on an invalid
    workflow, like ``validate``, while commands that run a workflow keep 2.
    """
    try:
        yield
    except FolpipeError as exc:
        if json_output:
            print_json(error_payload(exc))
        else:
            print_error(exc, get_console(stderr=True), root=root)
        code = exit_code_for(exc)
        if isinstance(exc, WorkflowValidationError):
            code = validation_exit_code
        raise click.exceptions.Exit(code) from None
