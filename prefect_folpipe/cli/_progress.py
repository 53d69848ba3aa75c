"""The live ``folpipe run`` view: the task tree with state, attempts, iteration, tokens, time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..workflow.tree import Workflow

STYLES = {
    "pending": "dim",
    "running": "bold cyan",
    "completed": "green",
    "cached": "blue",
    "skipped": "yellow",
    "failed": "bold red",
}
ICONS = {
    "pending": "·",
    "running": "▶",
    "completed": "✓",
    "cached": "↺",
    "skipped": "⤼",
    "failed": "✗",
}


class ProgressView:
    """Receives tracker events (``listener``) and renders them live with rich."""

    def __init__(self, workflow: Workflow, console: Console) -> None:
        self.workflow = workflow
        self.console = console
        self.records: dict[str, Any] = {}
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._order = [
            (task.path, task.name, task.path.count("/") + bool(task.path))
            for task in workflow.tasks()
        ]

    def listener(self, _event: str, record: Any) -> None:
        with self._lock:
            self.records[record.path] = record

    def _row(self, path: str, name: str, depth: int) -> list[Any]:
        record = self.records.get(path)
        status = "pending" if record is None else record.status
        if record is not None and status not in ("running", "pending"):
            status = record.settle()
        label = Text("  " * depth + (name if path else f"{name} (root)"))
        state = Text(f"{ICONS.get(status, '?')} {status}", style=STYLES.get(status, ""))
        if record is None:
            return [label, state, "", "", "", ""]
        elapsed = record.duration_s
        if record.started is not None:
            elapsed += time.monotonic() - record.started
        iteration = str(record.current_iteration or "") if record.current_iteration else ""
        tokens = record.input_tokens + record.output_tokens
        return [
            label,
            state,
            str(record.attempts or ""),
            iteration,
            str(tokens or ""),
            f"{elapsed:.1f}s" if elapsed else "",
        ]

    def render(self) -> Table:
        table = Table(
            title=f"{self.workflow.name} · {time.monotonic() - self.started:.1f}s",
            title_justify="left",
            expand=False,
        )
        for column in ("task", "state", "attempts", "iteration", "tokens", "elapsed"):
            table.add_column(column, justify="right" if column != "task" else "left")
        with self._lock:
            for path, name, depth in self._order:
                table.add_row(*self._row(path, name, depth))
        return table

    @contextmanager
    def live(self) -> Iterator[ProgressView]:
        """Show the view while the run goes on (static output when not a terminal)."""
        if not self.console.is_terminal:
            yield self
            return
        with Live(
            get_renderable=self.render, console=self.console, refresh_per_second=6, transient=True
        ) as live:
            self._live = live
            try:
                yield self
            finally:
                self._live = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The view steps aside (a question is asked on the terminal), then comes back."""
        live = getattr(self, "_live", None)
        if live is None:
            yield
            return
        live.stop()
        try:
            yield
        finally:
            live.start()
