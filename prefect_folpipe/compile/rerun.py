"""``--from TASK``: re-run a task and everything after it, restore the rest (Prefect-free).

A ``--from`` run asks again every pass of the named task(s) and of what runs after them or
depends on them: their subtrees, the later siblings in their branch (the later waves of a
sequential or prioritised branch, the dependents of a graph, every child of a loop), and the
final pass of each ancestor that has one (it reads the children's outputs). Those passes key
their checkpoints on this run (``compile.scope``): neither an earlier checkpoint nor a
journaled model answer is reused for them, and, like ``--fresh``, their new results replace
the shared checkpoints the next run reads. Everything else comes from its checkpoint; a task
before them without one is FP406, naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, suggest
from ..plan import CheckpointScope, NodePlan, Plan
from ..workflow.tree import Task, Workflow
from .options import RunOptions


def resolve_targets(workflow: Workflow, names: Iterable[str]) -> tuple[str, ...]:
    """The task paths ``--from`` names: a task path, a unique task name, or a task's folder
    (FP405 for anything else, or a name two tasks share)."""
    tasks = list(workflow.tasks())
    paths: list[str] = []
    for name in names:
        found = _resolve(workflow, tasks, str(name).strip())
        if found not in paths:
            paths.append(found)
    return tuple(paths)


def _resolve(workflow: Workflow, tasks: list[Task], name: str) -> str:
    by_path = [t.path for t in tasks if t.path and t.path == name.strip("/")]
    if by_path:
        return by_path[0]
    by_name = [t.path for t in tasks if t.path and t.name == name]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        raise ConfigError(
            f"--from {name!r}: {len(by_name)} tasks have that name ({', '.join(by_name)})",
            code="FP405",
            hint="name the task by its path",
        )
    folder = Path(name).expanduser()
    if folder.exists():
        wanted = folder.resolve()
        for task in tasks:
            if task.path and (Path(workflow.root_dir) / task.rel_dir).resolve() == wanted:
                return task.path
    known = [t.path for t in tasks if t.path]
    close = suggest(name, known)
    raise ConfigError(
        f"--from {name!r} names no task of the workflow",
        code="FP405",
        hint=f"did you mean {close!r}?" if close else f"task paths: {', '.join(known) or 'none'}",
    )


def rerun_passes(plan: Plan, targets: Iterable[str]) -> frozenset[str]:
    """The passes a ``--from targets`` run asks again (``CheckpointScope.rerun`` entries)."""
    parents = {child: node for node in plan.walk() for child in node.all_children}
    passes: set[str] = set()
    for target in targets:
        if target not in plan.nodes:
            continue
        passes.update(node.path for node in plan.walk(target))
        child = target
        while child in parents:
            parent = parents[child]
            for later in _after(plan, parent, child):
                passes.update(node.path for node in plan.walk(later))
            if "final" in parent.passes:
                passes.add(f"{parent.path}|final")
            child = parent.path
    return frozenset(passes)


def _after(plan: Plan, parent: NodePlan, child: str) -> list[str]:
    """The siblings of ``child`` that run after it or depend on it."""
    if parent.loop is not None:  # the next iteration starts from its outputs
        return [path for path in parent.children if path != child]
    if parent.dag is not None and parent.dag.stages:
        name = plan.task(child).name
        names = {n for n, ups in parent.dag.ancestors.items() if name in ups}
        return [path for path in parent.children if plan.task(path).name in names]
    waves = [tuple(w) for w in parent.waves] or [tuple(parent.children)]
    later: list[str] = []
    seen = False
    for wave in waves:
        if seen:
            later += wave
        seen = seen or child in wave
    return later


def covers(passes: frozenset[str], path: str, phase: str) -> bool:
    return path in passes or f"{path}|{phase}" in passes


def check_restorable(
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    passes: frozenset[str],
    reach: CheckpointScope,
) -> None:
    """FP406 when a task the ``--from`` run should restore has no checkpoint to restore from
    (it never ran, or changed since). Tasks whose checkpoints stay within a run (deployment
    runs) are not checked: their lineage's checkpoints, if any, are found by the run."""
    from ..plan import Settings, preview
    from .shared import manifest_dir, override_of, provider_salt
    from .storekey import unseal

    override = override_of(options)
    storage = options.storage_for(workflow.root_dir)
    settings = Settings(
        manifests=manifest_dir(workflow.root_dir, options),
        results=storage if isinstance(storage, Path) else None,
        salt=lambda task: provider_salt(task, override, workflow),
        rerun=lambda path, phase: covers(passes, path, phase),
        unseal=unseal,
    )
    missing: list[str] = []
    for step in preview(workflow, context, settings).steps:
        if step.status not in ("runs", "maybe skipped") or covers(passes, step.path, step.phase):
            continue
        task = workflow.find(step.path)
        if not task.settings.cache or not reach.shared(task):
            continue
        if _fed_by_rerun(step.reasons, passes):
            continue  # it reads only what re-run tasks produce: it runs again too
        if step.path not in missing:
            missing.append(step.path)
    if missing:
        names = ", ".join(path or "(root)" for path in missing)
        raise ConfigError(
            f"--from: {names} {'has' if len(missing) == 1 else 'have'} no checkpoint to "
            "restore from (never ran with this input, or changed since)",
            code="FP406",
            hint="run the workflow once without --from, or re-run from an earlier task "
            f"(--from {missing[0] or '(root)'})",
        )


def _fed_by_rerun(reasons: list[str], passes: frozenset[str]) -> bool:
    """The step runs only because an input comes from tasks that ``--from`` re-runs."""
    if len(reasons) != 1 or " comes from " not in reasons[0]:
        return False
    producers = reasons[0].split(" comes from ", 1)[1].split(", ")
    paths = ["" if name == "(root)" else name for name in producers]
    return all(path in passes or any(p.startswith(f"{path}|") for p in passes) for path in paths)


def prepare(
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    plan: Plan,
    reach: CheckpointScope,
) -> frozenset[str]:
    """Check a ``--from`` run before it starts (FP405 / FP406); the passes it asks again.
    ``reach``: the run's checkpoint scope (which tasks share checkpoints across runs)."""
    if not options.rerun_from:
        return frozenset()
    passes = rerun_passes(plan, resolve_targets(workflow, options.rerun_from))
    if not options.fresh:
        check_restorable(workflow, context, options, passes, reach)
    return passes


def quiet_passes(plan: Plan, workflow: Workflow, names: Iterable[str]) -> frozenset[str]:
    """:func:`rerun_passes` of whatever ``names`` resolve to (unknown names dropped: the
    run's own check reports them)."""
    targets: list[str] = []
    for name in names:
        try:
            targets += resolve_targets(workflow, [name])
        except ConfigError:
            continue
    return rerun_passes(plan, targets)
