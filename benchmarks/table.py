"""Read ``scenarios.yaml``: the shapes and the scenarios, checked, with ``--quick`` applied."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

TABLE = Path(__file__).with_name("scenarios.yaml")
MODULES = ("workflows", "trees", "handwritten")
"""The modules of this package a shape may name functions of."""
KINDS: dict[str, tuple[str, ...]] = {
    "run": ("bare", "same_work", "ideal"),
    "rerun": ("first_run",),
    "load": ("floor",),
    "cli": ("import_prefect", "bare"),
}
"""Each kind of scenario and the baselines it can be compared with."""
COMMANDS = ("validate", "run")


class TableError(ValueError):
    """scenarios.yaml says something this package cannot run."""


@dataclass(frozen=True)
class Shape:
    """The dotted names (``module.function``) that make one shape."""

    folder: str
    bare: str | None = None
    same_work: str | None = None

    def resolve(self, role: str) -> Callable[..., Any]:
        """The function named for ``role`` (``folder``, ``bare``, ``same_work``)."""
        name = getattr(self, role)
        if name is None:
            raise TableError(f"the shape has no {role} function")
        return resolve(name)


@dataclass(frozen=True)
class Scenario:
    """One row of the results table."""

    name: str
    title: str
    kind: str
    shape: Shape
    size: dict[str, Any] = field(default_factory=dict)
    latency: float | None = None
    ideal_s: float | None = None
    repetitions: int = 1
    compare: tuple[str, ...] = ()
    command: str | None = None
    warm_up: bool = False
    history: int = 0
    """rerun: earlier runs of the folder made (unmeasured) first, so the server's database
    holds them when the measured runs start."""


def resolve(dotted: str) -> Callable[..., Any]:
    """``module.function`` of this package (only the modules in ``MODULES``)."""
    module, _, function = dotted.partition(".")
    if module not in MODULES or not function:
        raise TableError(f"{dotted!r}: expected module.function with module in {MODULES}")
    found = getattr(importlib.import_module(f"{__package__}.{module}"), function, None)
    if not callable(found):
        raise TableError(f"{dotted!r}: no such function")
    return found


def load(quick: bool = False, path: Path = TABLE) -> dict[str, Scenario]:
    """Every scenario of the table, in its order (``quick``: with its ``quick`` overrides)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    shapes = {name: Shape(**spec) for name, spec in data["shapes"].items()}
    scenarios = {
        name: _scenario(name, dict(spec), shapes, quick) for name, spec in data["scenarios"].items()
    }
    return {name: scenario for name, scenario in scenarios.items() if scenario is not None}


def _scenario(
    name: str, spec: dict[str, Any], shapes: dict[str, Shape], quick: bool
) -> Scenario | None:
    """The scenario ``name`` of the table, or None when ``--quick`` leaves it out."""
    overrides = dict(spec.pop("quick", {}) or {})
    if quick and overrides.pop("skip", False):
        return None
    if quick:
        spec |= overrides
    shape = spec.pop("shape")
    try:
        spec["title"] = spec["title"].format(**spec.get("size", {}), latency=spec.get("latency"))
    except (KeyError, ValueError) as exc:
        raise TableError(f"{name}: its title names {exc}, not a size or latency") from None
    if shape not in shapes:
        raise TableError(f"{name}: unknown shape {shape!r}")
    spec["compare"] = tuple(spec.get("compare", ()))
    try:
        scenario = Scenario(name=name, shape=shapes[shape], **spec)
    except TypeError as exc:
        raise TableError(f"{name}: {exc}") from None
    _check(scenario)
    return scenario


def _check(scenario: Scenario) -> None:
    allowed = KINDS.get(scenario.kind)
    if allowed is None:
        raise TableError(f"{scenario.name}: unknown kind {scenario.kind!r}")
    unknown = set(scenario.compare) - set(allowed)
    if unknown:
        raise TableError(f"{scenario.name}: cannot compare {scenario.kind} with {unknown}")
    if scenario.kind == "cli" and scenario.command not in COMMANDS:
        raise TableError(f"{scenario.name}: command must be one of {COMMANDS}")
    if scenario.history and scenario.kind != "rerun":
        raise TableError(f"{scenario.name}: only a rerun scenario has a history")
    if scenario.repetitions < 1:
        raise TableError(f"{scenario.name}: repetitions must be at least 1")
    for role in ("bare", "same_work"):
        if role in scenario.compare and getattr(scenario.shape, role) is None:
            raise TableError(f"{scenario.name}: its shape has no {role} flow")
    if scenario.warm_up and scenario.shape.bare is None:
        raise TableError(f"{scenario.name}: warm_up runs the bare flow, and its shape has none")


def check_names(scenarios: dict[str, Scenario]) -> None:
    """Check, without importing anything, that every function the scenarios name is defined
    at the top of its module."""
    defined: dict[str, set[str]] = {}
    for module in MODULES:
        tree = ast.parse(Path(__file__).with_name(f"{module}.py").read_text(encoding="utf-8"))
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
        defined[module] = {node.name for node in tree.body if isinstance(node, kinds)}
    for scenario in scenarios.values():
        for role in ("folder", "bare", "same_work"):
            dotted = getattr(scenario.shape, role)
            module, _, function = (dotted or "").partition(".")
            if dotted is not None and function not in defined.get(module, set()):
                raise TableError(f"{scenario.name}: {role} {dotted!r} is not defined")


def check_functions(scenarios: dict[str, Scenario]) -> None:
    """Resolve every function the scenarios name (imports Prefect for the flows)."""
    for scenario in scenarios.values():
        for role in ("folder", "bare", "same_work"):
            if getattr(scenario.shape, role) is not None:
                scenario.shape.resolve(role)


def select(scenarios: dict[str, Scenario], only: str | None, repeat: int | None) -> list[Scenario]:
    """The scenarios named in ``only`` (comma-separated; all when empty), with ``repeat``."""
    names = [n.strip() for n in only.split(",") if n.strip()] if only else list(scenarios)
    missing = [n for n in names if n not in scenarios]
    if missing:
        raise TableError(f"no scenario {missing}; known: {', '.join(scenarios)}")
    chosen = [scenarios[n] for n in names]
    return [replace(s, repetitions=repeat) for s in chosen] if repeat else chosen
