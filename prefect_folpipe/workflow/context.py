"""The context rules of the folder format, one home for each.

* which keys a task sees (``input.required`` + ``input.optional``, or everything);
* which keys its checkpoint covers (what it sees, or everything when hooks or tools can read
  the whole context);
* where an answer lands (declared keys at the top level and under the task's name, or the
  text under the task's name; a declared key always wins over the copy under a name);
* the reserved keys ``_env`` and ``_errors``.

The agent (what the model is sent) and compile (the checkpoint key) both read these, so the key
always describes what the model was sent.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any

from .tree import Task

ENV_KEY = "_env"
"""Injected before each agent call (``cwd``, ``task_dir``); never merged back."""
ERRORS_KEY = "_errors"
"""Non-fatal failures ``{task, path, error, iteration}``, appended from any depth."""


def visible_keys(task: Task, phase: str = "single") -> list[str] | None:
    """The context keys the agent of ``task`` is shown (``None``: every key).

    With a declared ``input``: its required and optional keys, plus, in the ``final`` pass of a
    task with children, each child's name and declared output keys.
    """
    spec = task.config.input
    if spec is None:
        return None
    keys = [*spec.required, *spec.optional]
    if phase == "final":
        for child in task.children:
            keys += [child.name, *child.config.output_keys]
    return list(dict.fromkeys(keys))


def reads_whole_context(task: Task) -> bool:
    """Whether code of the task (hooks, executable tools) can read any context key."""
    return bool(task.hooks) or any(tool.executable for tool in task.tools)


def checkpoint_inputs(task: Task, context: Mapping[str, Any], phase: str = "single") -> dict:
    """The part of ``context`` a task's result depends on (its checkpoint key covers it).

    ``_env`` never counts: it is recomputed per call and holds absolute paths.
    """
    keys = None if reads_whole_context(task) else visible_keys(task, phase)
    if keys is None:
        return {key: value for key, value in context.items() if key != ENV_KEY}
    return {key: context.get(key) for key in keys}


def answer_delta(
    task: Task,
    outputs: Mapping[str, Any] | None,
    text: str = "",
    *,
    declared: Collection[str] = (),
) -> dict:
    """Where an answer lands: declared outputs at the top level and, as a copy, under the
    task's name; without declared outputs, the text under the task's name.

    A declared top-level key always wins: the copy under the task's name is left out when that
    name is one of the task's own output keys or in ``declared`` (every key some task of the
    workflow declares, :attr:`Workflow.declared_outputs`).
    """
    if task.config.output is None and outputs is None:
        return {task.name: text}
    values = copy.deepcopy(dict(outputs or {}))
    if task.name in values or task.name in declared or task.name in task.config.output_keys:
        return values
    return {**values, task.name: copy.deepcopy(values)}
