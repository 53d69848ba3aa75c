"""One row per scenario: folpipe beside its baselines, as seconds and ratios."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

LABELS = {
    "ideal": "ideal",
    "bare": "bare",
    "same_work": "same work",
    "first_run": "first run",
    "floor": "floor",
    "import_prefect": "import prefect",
}
"""How a baseline is named in the ratios column."""
HEADER = (
    "| scenario | ideal | hand-written, bare | hand-written, same work | other baseline "
    "| **prefect_folpipe** | ratios |\n|---|---|---|---|---|---|---|"
)


@dataclass
class Row:
    """What one scenario measured: the best of each system's runs, in seconds."""

    name: str
    title: str
    folpipe_s: float
    baselines: dict[str, float] = field(default_factory=dict)
    """``ideal``, ``bare``, ``same_work``, or the scenario's other baseline."""
    runs: dict[str, list[float | None]] = field(default_factory=dict)
    """Every measured run, per system (None: it failed)."""
    note: str = ""

    def ratios(self) -> str:
        """``1.19x bare, 1.47x ideal``: folpipe over each baseline (a zero one is left out)."""
        parts = [
            f"{self.folpipe_s / seconds:.2f}x {LABELS[key]}"
            for key, seconds in self.baselines.items()
            if seconds > 0
        ]
        return ", ".join(parts) or "—"

    def markdown(self) -> str:
        """The row of the results table."""
        other = [
            (k, s) for k, s in self.baselines.items() if k not in ("ideal", "bare", "same_work")
        ]
        other_cell = ", ".join(f"{_s(s)} ({LABELS[k]})" for k, s in other) or "—"
        cells = [
            self.title,
            _s(self.baselines.get("ideal")),
            _s(self.baselines.get("bare")),
            _s(self.baselines.get("same_work")),
            other_cell,
            f"**{_s(self.folpipe_s)}**" + (f" ({self.note})" if self.note else ""),
            self.ratios(),
        ]
        return "| " + " | ".join(cells) + " |"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratios": self.ratios()}


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1.0 else f"{seconds:.2f} s"


def table(rows: list[Row]) -> str:
    """The markdown results table."""
    return "\n".join([HEADER, *(row.markdown() for row in rows)])


def dump(rows: list[Row]) -> str:
    """Every row with its runs, as JSON."""
    return json.dumps([row.as_json() for row in rows], indent=2)
