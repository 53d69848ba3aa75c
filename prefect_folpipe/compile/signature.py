"""The flow's parameter signature: ``context``, the root task's declared inputs, run options.

Prefect derives a flow's parameter schema (the form in the UI, the checks on deployment
parameters) from ``inspect.signature`` of the flow function. A flow built from a folder has a
generic body, so the signature is made from the root task's ``input`` and attached as
``__signature__``:

* ``context``: the free-form initial context (first, positional, optional);
* one keyword parameter per declared input: ``input.required`` keys are required in the form,
  ``input.optional`` ones default to ``None``; the declared type (``str``, ``int``, ...)
  types it, an untyped key takes any JSON value; the description comes from the input's
  ``description:`` or its task.yaml comment;
* ``fresh`` (re-run every task) and ``reuse_checkpoints`` (reuse checkpoints of earlier runs:
  off for deployment runs unless the workflow opts in, see ``compile.scope``).

The function itself takes ``(context=None, **inputs)``, so a required input may also come
inside ``context`` (``flow(context={"topic": "x"})``); a required input given nowhere fails the
run with FP313. Prefect-free.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..workflow.config import TaskConfig

CONTEXT_PARAMETER = inspect.Parameter(
    "context",
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    default=None,
    annotation=dict[str, Any] | None,
)
RUN_PARAMETERS = ("fresh", "reuse_checkpoints", "rerun_from", "restore_from")
"""Run options every workflow flow (and so every deployment) takes besides its inputs."""
RESERVED = ("context", *RUN_PARAMETERS)
TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list[Any],
    "dict": dict[str, Any],
}


def input_names(config: TaskConfig) -> list[str]:
    """Declared input keys usable as parameter names (identifiers, not reserved ones)."""
    if config.input is None:
        return []
    return [key for key in config.input.names() if key.isidentifier() and key not in RESERVED]


def required_inputs(config: TaskConfig) -> list[str]:
    """The input parameters the form requires (``input.required``)."""
    if config.input is None:
        return []
    required = set(config.input.required)
    return [key for key in input_names(config) if key in required]


def input_descriptions(config: TaskConfig) -> dict[str, str]:
    """``{parameter: description}`` shown under each field of the Prefect UI form."""
    described: dict[str, str] = {}
    required = set(required_inputs(config))
    for key in input_names(config):
        declared = config.input.field(key).description if config.input else None
        described[key] = declared or (
            f"{'required' if key in required else 'optional'} input of the workflow"
        )
    return described


def _annotation(config: TaskConfig, key: str, *, required: bool) -> Any:
    declared = config.input.field(key).type if config.input else None
    kind = TYPES[declared] if declared else Any
    if not required and kind is not Any:
        kind = kind | None
    return kind


RUN_PARAMETER_HELP = {
    "context": "initial context (any JSON object); the inputs below are merged over it",
    "fresh": "re-run every task: ignore the checkpoints of earlier runs",
    "reuse_checkpoints": "reuse checkpoints of earlier runs (empty: the workflow's "
    "settings.cache.across_runs; deployment runs re-run every task unless it opts in)",
    "rerun_from": "task names or paths to ask again, with what runs after them; the rest "
    "comes from checkpoints (folpipe run --from)",
    "restore_from": "the flow run whose checkpoints the other tasks come from (empty: this "
    "run's own; folpipe resume --flow-run ID --from TASK sets it)",
}


def _run_parameters() -> list[inspect.Parameter]:
    keyword = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter("fresh", keyword, default=False, annotation=bool),
        inspect.Parameter("reuse_checkpoints", keyword, default=None, annotation=bool | None),
        inspect.Parameter("rerun_from", keyword, default=None, annotation=list[str] | None),
        inspect.Parameter("restore_from", keyword, default=None, annotation=str | None),
    ]


def docstring(config: TaskConfig) -> str:
    """The flow function's docstring: Prefect reads each parameter's description (the text
    under its field in the UI form) from its ``Args:`` section."""
    lines = [config.description or "A folpipe workflow.", "", "Args:"]
    described = {"context": RUN_PARAMETER_HELP["context"], **input_descriptions(config)}
    described |= {key: RUN_PARAMETER_HELP[key] for key in RUN_PARAMETERS}
    lines += [f"    {key}: {' '.join(text.split())}" for key, text in described.items()]
    return "\n".join(lines)


def parameter_signature(config: TaskConfig) -> inspect.Signature:
    """``(context=None, *, <inputs>, fresh=False, reuse_checkpoints=None)`` for the root
    task's config (``context`` stays the only positional parameter, as ``folder_to_flow``'s
    contract says)."""
    required = set(required_inputs(config))
    parameters = [
        inspect.Parameter(
            key,
            inspect.Parameter.KEYWORD_ONLY,
            default=_default(config, key, required=key in required),
            annotation=_annotation(config, key, required=key in required),
        )
        for key in input_names(config)
    ]
    return inspect.Signature([CONTEXT_PARAMETER, *parameters, *_run_parameters()])


def _default(config: TaskConfig, key: str, *, required: bool) -> Any:
    """The root ``context:`` value of ``key`` (the form shows it filled in), else none: a
    required input must be given."""
    if key in config.context:
        return config.context[key]
    return inspect.Parameter.empty if required else None


def merge_inputs(context: Mapping[str, Any] | None, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Initial context: ``context`` overlaid with the input parameters that were given."""
    merged = dict(context or {})
    merged.update({key: value for key, value in inputs.items() if value is not None})
    return merged


def complete_call(config: TaskConfig, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Inputs a direct call gives inside ``context`` (``flow(context={"topic": "x"})``) become
    its parameters (so no default overrides them); a required input given nowhere is ``None``
    (the run then reports FP313), so Prefect can bind the call."""
    context = kwargs.get("context", args[0] if args else None)
    given = context if isinstance(context, Mapping) else {}
    required = set(required_inputs(config))
    for key in input_names(config):
        if key not in kwargs and (key in given or key in required):
            kwargs[key] = given.get(key)


def with_input_signature(body: Callable[..., Any], config: TaskConfig) -> Callable[..., Any]:
    """Give ``body(context=None, **inputs)`` the root task's parameter signature and their
    descriptions, in place."""
    body.__signature__ = parameter_signature(config)  # type: ignore[attr-defined]
    body.__doc__ = docstring(config)
    return body
