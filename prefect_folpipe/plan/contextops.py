"""Context rules (docs/running.md, "Context") as small pure functions (Prefect-free).

Context flows vertically: a child gets a copy of its parent's context; the parent merges the
children's deltas in sibling order. ``_errors`` accumulates (deltas carry only new entries),
``_env`` is injected per agent call by the agent and never merged back.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from ..workflow.context import ENV_KEY, ERRORS_KEY
from ..workflow.names import pass_label
from ..workflow.tree import Task, Workflow


class ContextBox:
    """An input context passed to a Prefect task run, opaque to Prefect.

    Prefect walks every collection parameter of every task run (futures, states, inputs); a
    plain dict context growing with each task made a 200-task chain quadratic.
    """

    __slots__ = ("keys", "value")

    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value
        self.keys: dict[tuple[Any, ...], str] = {}
        """Checkpoint keys computed for the pass this box is the input of: a pass never
        changes its input context, so its lock, Prefect's cache key, the shared checkpoint
        and the manifest serialise the context once between them."""

    def __repr__(self) -> str:
        return f"<context: {len(self.value)} keys>"


def unbox(value: Any) -> dict[str, Any]:
    """The context inside a ``ContextBox`` (or the value itself)."""
    return value.value if isinstance(value, ContextBox) else value


def canonical_json(value: Any) -> str:
    """Stable JSON text: sorted keys, no whitespace; unknown objects fall back to ``repr``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)


def seed_context(workflow: Workflow, context: Mapping[str, Any] | None) -> dict[str, Any]:
    """Root ``context:`` of task.yaml overlaid with the run's ``context`` argument."""
    seeded = copy.deepcopy(dict(workflow.root.config.context))
    seeded.update(copy.deepcopy(dict(context or {})))
    seeded.pop(ENV_KEY, None)
    return seeded


def child_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """The independent copy a child receives."""
    return copy.deepcopy(dict(context))


def merge_delta(target: dict[str, Any], delta: Mapping[str, Any]) -> None:
    """Merge one task's delta into ``target`` in place (``_errors`` appends)."""
    for key, value in delta.items():
        if key == ENV_KEY:
            continue
        if key == ERRORS_KEY:
            target.setdefault(ERRORS_KEY, [])
            target[ERRORS_KEY] = [*target[ERRORS_KEY], *copy.deepcopy(list(value))]
        else:
            target[key] = copy.deepcopy(value)


def error_entry(task: Task, error: BaseException | str, iteration: int | None) -> dict[str, Any]:
    """One ``_errors`` entry: ``{task, path, error, iteration}``."""
    return error_record(task.name, task.path, error, iteration)


def error_record(
    name: str, path: str, error: BaseException | str, iteration: int | None
) -> dict[str, Any]:
    """One ``_errors`` entry: ``task`` is the task's name (as folpipe 0.1.8 wrote it, so
    ``e['task'] == 'fetch'`` matches), ``path`` its path from the root (``""`` for the root)."""
    return {"task": name, "path": path, "error": describe_error(error), "iteration": iteration}


def describe_error(error: BaseException | str) -> str:
    """``Type: message`` (with the folpipe code when there is one)."""
    if isinstance(error, str):
        return error
    code = getattr(error, "code", None)
    prefix = f"{type(error).__name__}"
    if isinstance(code, str) and code.startswith("FP"):
        prefix = f"{prefix} [{code}]"
    text = str(error).strip()
    return f"{prefix}: {text}" if text else prefix


def plain(value: Any) -> Any:
    """A JSON round trip: the final context is a plain JSON-serialisable dict."""
    return json.loads(json.dumps(value, default=repr))


def pass_parameters(context: dict[str, Any], scope: Any, path: str, phase: str) -> dict[str, Any]:
    """The parameters of one agent pass's task run: its input context (boxed), its run name
    (``path[i]`` plus the phase) and its loop scope."""
    return {
        "context": ContextBox(context),
        "label": pass_label(scope.label(path), phase),
        "scope": list(scope.iteration),
    }
