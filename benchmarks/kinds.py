"""How each kind of scenario is measured (``scenarios.yaml``'s ``kind``): one function each,
taking the scenario and a scratch folder, returning its :class:`Row`.

Systems measured side by side run in one process, :func:`measure.settle` apart, in the
scenario's order on odd repetitions and reversed on even ones (a later run meets a server
that has recorded more); the best run of each counts.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import measure
from .report import Row
from .table import Scenario

ROOT = Path(__file__).resolve().parent.parent
"""The repository: the working folder of child processes that import this package."""


def build_folder(scenario: Scenario, root: Path) -> Path:
    """Write the scenario's workflow folder under ``root``."""
    extra = {} if scenario.latency is None else {"latency": scenario.latency}
    return scenario.shape.resolve("folder")(root, **scenario.size, **extra)


def _flow(scenario: Scenario, role: str, **extra: Any) -> Callable[[], Any]:
    flow = scenario.shape.resolve(role)
    return lambda: flow(**scenario.size, latency=scenario.latency or 0.0, **extra)


def _alternate(
    scenario: Scenario,
    systems: dict[str, Callable[[], float]],
    wait: Callable[[], None] = measure.settle,
) -> dict[str, list[float | None]]:
    """Each system once per repetition, ``wait()`` before each, the order reversed every
    other repetition. A baseline's failed run is ``None`` (a loaded SQLite server may answer
    503 to concurrent subflows); folpipe's failure fails the scenario."""
    runs: dict[str, list[float | None]] = {key: [] for key in systems}
    for repetition in range(scenario.repetitions):
        order = list(systems)[:: -1 if repetition % 2 else 1]
        for key in order:
            wait()
            try:
                runs[key].append(systems[key]())
            except Exception as exc:
                if key == "folpipe":
                    raise
                print(f"# {scenario.name}: {key} failed: {exc!r:.300}", file=sys.stderr)
                runs[key].append(None)
    return runs


def _row(scenario: Scenario, runs: dict[str, list[float | None]], note: str = "") -> Row:
    done = {key: [v for v in values if v is not None] for key, values in runs.items()}
    best = {key: min(values) for key, values in done.items() if values}
    failed = [key for key, values in runs.items() if None in values]
    if failed:
        note = ", ".join([note, *(f"{k} failed {runs[k].count(None)}x" for k in failed)])
    baselines = {key: best[key] for key in scenario.compare if key in best}
    if "ideal" in scenario.compare and scenario.ideal_s is not None:
        baselines["ideal"] = scenario.ideal_s
    return Row(scenario.name, scenario.title, best["folpipe"], baselines, runs, note.strip(", "))


def run(scenario: Scenario, scratch: Path) -> Row:
    """folpipe's fresh run beside the hand-written flows of the same shape."""
    folder = build_folder(scenario, scratch / "folder")
    storage = str(scratch / "hand" / ".folpipe" / "results")  # as deep as folpipe's
    reports: list[float] = []

    def folpipe() -> float:
        seconds, result = measure.run_folpipe(folder, fresh=True)
        reports.append(result.reports_after_s)
        return seconds

    systems: dict[str, Callable[[], float]] = {"folpipe": folpipe}
    if "bare" in scenario.compare:
        systems["bare"] = lambda: measure.run_flow(_flow(scenario, "bare"))
    if "same_work" in scenario.compare:
        systems["same_work"] = lambda: measure.run_flow(
            _flow(scenario, "same_work", storage=storage)
        )
    if scenario.warm_up:
        measure.settle()
        measure.run_flow(_flow(scenario, "bare"))
    runs = _alternate(scenario, systems)
    return _row(scenario, runs, note=f"reports written {min(reports):.1f} s after")


def rerun(scenario: Scenario, scratch: Path) -> Row:
    """folpipe's cached re-run (nothing changed) beside its first run of the folder."""
    folder = build_folder(scenario, scratch / "folder")
    runs: dict[str, list[float | None]] = {"folpipe": [], "first_run": []}
    for _ in range(scenario.history):  # the server's database holds these first
        measure.settle()
        measure.run_folpipe(folder, fresh=True)
    for _ in range(scenario.repetitions):
        measure.settle()
        runs["first_run"].append(measure.run_folpipe(folder, fresh=True)[0])
        measure.settle()
        seconds, result = measure.run_folpipe(folder)
        statuses = {row["status"] for row in result.tasks}
        if statuses - {"cached"}:
            raise RuntimeError(f"{scenario.name}: a re-run ran tasks again ({statuses})")
        runs["folpipe"].append(seconds)
    note = f"{scenario.history} earlier runs in the server's database" if scenario.history else ""
    return _row(scenario, runs, note)


def floor(root: Path) -> None:
    """The least any loader does: walk the folder, read every file, parse every task.yaml
    with libyaml."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            data = Path(folder, name).read_bytes()
            if name == "task.yaml":
                yaml.load(data, Loader=loader)


def load(scenario: Scenario, scratch: Path) -> Row:
    """``load_workflow`` (every rule checked) of a folder loaded before in this process,
    beside the floor of reading and parsing its files; median of the repetitions."""
    from prefect_folpipe.validate import load_workflow, validate_workflow

    root = build_folder(scenario, scratch / "folder")
    diagnostics = validate_workflow(root)
    if diagnostics:
        raise RuntimeError(f"{scenario.name}: the folder does not validate: {diagnostics[:3]}")
    count = len(load_workflow(root).tasks())
    runs: dict[str, list[float | None]] = {"folpipe": [], "floor": []}
    for _ in range(scenario.repetitions):
        runs["floor"].append(measure.timed(lambda: floor(root))[0])
        runs["folpipe"].append(measure.timed(lambda: load_workflow(root))[0])
    median: dict[str, list[float | None]] = {
        key: [statistics.median(v for v in values if v is not None)] for key, values in runs.items()
    }
    row = _row(scenario, median, note=f"{count} tasks, median of {scenario.repetitions}")
    row.runs = runs
    return row


def cli(scenario: Scenario, scratch: Path) -> Row:
    """A new ``folpipe validate`` / ``folpipe run`` process beside a new process that only
    imports Prefect (and, for ``run``, one running the bare flow of the same shape)."""
    root = build_folder(scenario, scratch / "folder")
    env = measure.process_env(scratch, FOLPIPE_PARSE_CACHE=str(scratch / "parse-cache"))
    command = [sys.executable, "-m", "prefect_folpipe", scenario.command or "validate", str(root)]
    if scenario.command == "run":
        if not os.environ.get("PREFECT_API_URL"):
            raise RuntimeError(f"{scenario.name} needs a running server (not --server ephemeral)")
        command += ["--json", "--fresh"]
    commands = {"folpipe": command, "import_prefect": [sys.executable, "-c", "import prefect"]}
    if "bare" in scenario.compare:
        commands["bare"] = [sys.executable, "-m", f"{__package__}.handwritten"]
    for cmd in commands.values():  # fills the bytecode and parse caches
        measure.run_process(cmd, env, ROOT)

    def fresh(cmd: list[str]) -> Callable[[], float]:
        return lambda: measure.run_process(cmd, env, ROOT)

    systems = {key: fresh(cmd) for key, cmd in commands.items()}
    wait = measure.settle if scenario.command == "run" else lambda: None  # no server involved
    return _row(scenario, _alternate(scenario, systems, wait))


KINDS: dict[str, Callable[[Scenario, Path], Row]] = {
    "run": run,
    "rerun": rerun,
    "load": load,
    "cli": cli,
}
