"""``run_task``: one task folder's hooks and agent pass, turned into a ``TaskOutcome``.

Phases (``phase=``):

* ``single`` — pre_run hook, agent pass, post_run hook (a leaf task);
* ``first`` — pre_run hook and the first agent pass of a task that also has children;
* ``final`` — the final agent pass over the children's outputs, then the post_run hook.

A task without instructions only runs its hooks. The caller's ``context`` is never mutated:
the task works on a deep copy, and ``TaskOutcome.delta`` is what the caller merges.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .. import telemetry
from .._process.wording import noun
from ..errors import ConfigError, MissingInputError, TaskError
from ..providers.base import Provider
from ..providers.registry import provider_name
from ..redaction import SECRETS, mask_exception, redacting
from ..workflow.context import ENV_KEY, answer_delta, visible_keys
from ..workflow.jsondata import NotPlainJSON, check_plain
from ..workflow.providers import NO_PROVIDER_MESSAGE
from ..workflow.tree import Task, Workflow
from .journal import Journal
from .loop import AgentPass, CallLedger, Conversation, converse
from .result import TaskOutcome, attach_report

Phase = Literal["single", "first", "final"]
PHASES: tuple[str, ...] = ("single", "first", "final")
LOG = logging.getLogger("prefect_folpipe.agent")


async def run_task(
    task: Task,
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    *,
    provider: Provider | None,
    phase: Phase = "single",
    iteration: int | None = None,
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    ledger: CallLedger | None = None,
    journal: Journal | None = None,
) -> TaskOutcome:
    """Run ``task``'s hooks and agent pass for ``phase`` over a copy of ``context``.

    ``journal`` (one per pass) answers the model calls an earlier attempt already paid for.
    Everything it returns or raises, and everything logged through ``logger`` by the agent,
    tools and hooks, is masked through the redaction registry: a secret (an API key, a token
    in the environment, a resolved Secret block) that a model echoes or a hook puts in the
    context never reaches the context, checkpoints, artifacts, logs or later prompts.
    """
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    logger = redacting(logger or LOG)
    try:
        outcome = await _run_task(
            task, workflow, context, provider, phase, iteration, logger, ledger, journal
        )
    except BaseException as exc:
        mask_exception(exc)
        raise
    return _masked(outcome)


def _masked(outcome: TaskOutcome) -> TaskOutcome:
    fields = ("delta", "text", "outputs", "prompt", "transcript", "tool_log")
    masked = SECRETS.data({name: getattr(outcome, name) for name in fields})
    for name in fields:
        setattr(outcome, name, masked[name])
    return outcome


async def _run_task(
    task: Task,
    workflow: Workflow,
    context: Mapping[str, Any] | None,
    provider: Provider | None,
    phase: Phase,
    iteration: int | None,
    logger: logging.Logger | logging.LoggerAdapter[Any],
    ledger: CallLedger | None,
    journal: Journal | None,
) -> TaskOutcome:
    before: Mapping[str, Any] = context or {}  # only read: compute_delta compares with it
    working = _working_copy(task, before)
    working[ENV_KEY] = env_of(task, workflow)
    if phase != "final" and "pre_run" in task.hooks:
        working = await _hook("pre_run", task, workflow, working, logger)
        working[ENV_KEY] = env_of(task, workflow)
    outcome = TaskOutcome(delta={})
    output_keys: tuple[str, ...] = ()
    if task.runs_agent:
        if provider is None:
            raise ConfigError(NO_PROVIDER_MESSAGE, code="FP300")
        convo, prompt = await _agent_pass(
            task, workflow, working, provider, iteration, logger, ledger, phase, journal
        )
        output_keys = _apply_answer(task, working, convo, workflow.declared_outputs)
        _fill_outcome(outcome, convo, prompt, provider)
    if phase != "first" and "post_run" in task.hooks:
        working = await _hook("post_run", task, workflow, working, logger)
    outcome.delta = compute_delta(before, working, output_keys)
    _check_json(task, outcome.delta)
    return outcome


def _check_json(task: Task, delta: Mapping[str, Any]) -> None:
    """What a task adds to the context is checkpointed and printed as strict JSON: refuse
    ``NaN``, dates, sets, objects and hostile nesting here, with a code (FP515)."""
    try:
        check_plain(dict(delta), "context")
    except NotPlainJSON as exc:
        raise TaskError(
            f"task {task.path or task.name!r} produced a value that is not JSON: {exc}",
            code="FP515",
            hint="keep context values JSON: strings, finite numbers, booleans, null, lists and "
            "objects with string keys",
        ) from None


def _working_copy(task: Task, context: Mapping[str, Any]) -> dict[str, Any]:
    """The context the task works on. Hooks and tools get it as a mutable object, so they
    get a deep copy; without them the agent pass only replaces top-level keys, so a shallow
    copy keeps the caller's context intact (and a long chain from copying it per task)."""
    if task.hooks or task.tools:
        return copy.deepcopy(dict(context))
    return dict(context)


def env_of(task: Task, workflow: Workflow) -> dict[str, str]:
    """The ``_env`` key injected before each agent call (docs/format.md, "Outputs")."""
    return {"cwd": str(Path(workflow.root_dir).absolute()), "task_dir": task.rel_dir}


def scoped_input(task: Task, context: Mapping[str, Any], phase: Phase = "single") -> dict[str, Any]:
    """What the agent sees: every key, or only ``input.required`` + ``input.optional`` + ``_env``.

    In the ``final`` phase the children's results (their names and declared output keys) are
    visible as well. A missing required key raises ``MissingInputError`` naming it.
    """
    keys = visible_keys(task, phase)
    if keys is None:
        return dict(context)
    missing = [key for key in task.config.input.required if key not in context]  # type: ignore[union-attr]
    if missing:
        exc = MissingInputError(
            f"task {task.path or task.name!r}: required input {noun(len(missing), 'key')} "
            f"{', '.join(repr(k) for k in missing)} missing from the context",
            hint="produce the key in an earlier task, or pass it with --context",
        )
        exc.missing = missing  # type: ignore[attr-defined]
        raise exc
    view = {key: context[key] for key in keys if key in context}
    view[ENV_KEY] = context.get(ENV_KEY)
    return view


def system_prompt_of(task: Task, reference_text: str = "") -> str:
    """The system prompt as sent: the task's prompt plus the reference-tools text."""
    prompt = task.system_prompt if task.system_prompt is not None else task.instructions or ""
    if reference_text.strip():
        prompt = f"{prompt.rstrip()}\n\n{reference_text.strip()}"
    return prompt


async def _agent_pass(
    task: Task,
    workflow: Workflow,
    working: dict[str, Any],
    provider: Provider,
    iteration: int | None,
    logger: logging.Logger | logging.LoggerAdapter[Any],
    ledger: CallLedger | None,
    phase: Phase,
    journal: Journal | None = None,
) -> tuple[Conversation, str]:
    view = scoped_input(task, working, phase)
    # the model never reads a registered secret, wherever in the context it came from
    user_message = SECRETS.text(json.dumps(view, indent=2, ensure_ascii=False, default=str))
    toolbox = _make_toolbox(task, workflow, working, logger) if task.tools else None
    try:
        if toolbox is not None and any(spec.kind == "mcp" for spec in task.tools):
            from ..tools.mcp import prepare_toolbox  # schemas from the MCP servers

            await prepare_toolbox(toolbox)
        prompt = system_prompt_of(task, toolbox.reference_text() if toolbox else "")
        convo = await converse(
            AgentPass(
                task=task,
                provider=provider,
                system=prompt,
                user_message=user_message,
                tools=toolbox,
                output_types=task.config.output_types,
                iteration=iteration,
                ledger=ledger,
                logger=logger,
                journal=journal,
            )
        )
        convo.tool_log = [_log_entry(record) for record in getattr(toolbox, "log", [])]
    except Exception as exc:  # the failed task's artifact shows the tool calls it made
        attach_report(exc, tool_log=[_log_entry(r) for r in getattr(toolbox, "log", [])])
        raise
    finally:
        if toolbox is not None:
            await toolbox.aclose()
    return convo, prompt


def _log_entry(record: Any) -> dict[str, Any]:
    to_dict = getattr(record, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else dict(record)


def _make_toolbox(
    task: Task,
    workflow: Workflow,
    context: dict[str, Any],
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> Any:
    from ..tools.toolbox import Toolbox

    return Toolbox(task, workflow, context, logger=logger)


async def _hook(
    stage: str,
    task: Task,
    workflow: Workflow,
    working: dict[str, Any],
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> dict[str, Any]:
    from ..tools.hooks import run_hook

    hook = task.hooks[stage]
    with telemetry.hook_span(stage, getattr(hook, "suffix", "").lstrip(".") or "http"):
        returned = await run_hook(
            stage, hook, context=working, task=task, workflow=workflow, logger=logger
        )
    return dict(returned) if isinstance(returned, Mapping) else working


def _apply_answer(
    task: Task, working: dict[str, Any], convo: Conversation, declared: frozenset[str]
) -> tuple[str, ...]:
    """Write the answer into the working context (so post_run sees it); return its keys."""
    outputs = None if task.config.output is None else convo.outputs
    delta = answer_delta(task, outputs, convo.text, declared=declared)
    working.update(delta)
    return tuple(delta)


def _fill_outcome(
    outcome: TaskOutcome, convo: Conversation, prompt: str, provider: Provider
) -> None:
    outcome.text = convo.text
    outcome.outputs = dict(convo.outputs)
    outcome.usage = convo.usage
    outcome.model_calls = convo.model_calls
    outcome.replayed_calls = convo.replayed_calls
    outcome.replayed_usage = convo.replayed_usage
    outcome.tool_calls = convo.tool_calls
    outcome.cost = convo.cost
    outcome.prompt = prompt
    outcome.transcript = convo.transcript
    outcome.tool_log = list(convo.tool_log)
    outcome.model = convo.model
    outcome.provider = provider_name(provider)


def compute_delta(
    before: Mapping[str, Any], after: Mapping[str, Any], output_keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Output keys (always) plus every key added or changed since ``before``, minus ``_env``."""
    delta = {key: after[key] for key in output_keys if key in after}
    for key, value in after.items():
        if key == ENV_KEY or key in delta:
            continue
        if key not in before or before[key] != value:
            delta[key] = value
    return delta
