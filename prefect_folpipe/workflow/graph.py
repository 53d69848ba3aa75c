"""The ``depends_on`` DAG of a ``graph`` branch, over sibling names (pure, stdlib only).

One implementation for everyone who reads the edges: the plan (stages, transitive upstreams,
the run order), the validator (unknown names, cycles) and the views. ``upstreams`` maps each
sibling name, in sibling order, to the names it depends on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Upstreams = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Dag:
    """A checked DAG: stages (1 = no upstream) and transitive upstreams in sibling order."""

    stages: Mapping[str, int]
    ancestors: Mapping[str, tuple[str, ...]]


class DagError(ValueError):
    """``depends_on`` names an unknown sibling, or the edges form a cycle."""

    def __init__(self, message: str, *, cycle: tuple[str, ...] = (), unknown: str = "") -> None:
        super().__init__(message)
        self.cycle = cycle
        self.unknown = unknown


def unknown_upstreams(upstreams: Upstreams) -> list[tuple[str, str]]:
    """``(task, upstream)`` for every upstream name that is not a sibling."""
    return [(name, up) for name, ups in upstreams.items() for up in ups if up not in upstreams]


def find_cycle(upstreams: Upstreams) -> tuple[str, ...]:
    """One cycle as ``(a, b, ..., a)`` read as "a depends on b ...", or ``()`` if none."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    trail: list[str] = []

    def visit(name: str) -> tuple[str, ...]:
        state[name] = 1
        trail.append(name)
        for up in upstreams.get(name, ()):
            if up not in upstreams:
                continue
            if state.get(up) == 1:
                return (*trail[trail.index(up) :], up)
            if up not in state and (found := visit(up)):
                return found
        trail.pop()
        state[name] = 2
        return ()

    for name in upstreams:
        if name not in state and (found := visit(name)):
            return found
    return ()


def simple_cycles(upstreams: Upstreams, *, limit: int = 10) -> list[tuple[str, ...]]:
    """Distinct elementary cycles (each starting at its smallest name), at most ``limit``."""
    names = sorted(upstreams)
    found: list[tuple[str, ...]] = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for up in upstreams.get(node, ()):
            if len(found) >= limit or up not in upstreams or up < start:
                continue
            if up == start:
                found.append((*path, start))
            elif up not in path:
                walk(start, up, [*path, up])

    for start in names:
        walk(start, start, [start])
    return found[:limit]


def check_dag(upstreams: Upstreams) -> Dag:
    """Stages and transitive upstreams; ``DagError`` on an unknown name or a cycle."""
    unknown = unknown_upstreams(upstreams)
    if unknown:
        name, up = unknown[0]
        raise DagError(f"task '{name}' depends on '{up}', which is not a sibling", unknown=up)
    cycle = find_cycle(upstreams)
    if cycle:
        raise DagError(f"depends_on cycle: {' -> '.join(cycle)}", cycle=cycle)
    return Dag(stages=_stages(upstreams), ancestors=_ancestors(upstreams))


def _stages(upstreams: Upstreams) -> dict[str, int]:
    stages: dict[str, int] = {}

    def stage(name: str) -> int:
        if name not in stages:
            stages[name] = 1 + max((stage(up) for up in upstreams[name]), default=0)
        return stages[name]

    return {name: stage(name) for name in upstreams}


def _ancestors(upstreams: Upstreams) -> dict[str, tuple[str, ...]]:
    found: dict[str, set[str]] = {}

    def closure(name: str) -> set[str]:
        if name not in found:
            found[name] = set()
            for up in upstreams[name]:
                found[name] |= {up} | closure(up)
        return found[name]

    order = list(upstreams)
    return {name: tuple(n for n in order if n in closure(name)) for name in order}
