"""The flow's parameter signature: the root task's declared ``input`` plus ``context``.

Prefect derives a flow's parameter schema (the form in the UI, the checks on deployment
parameters) from ``inspect.signature`` of the flow function. A flow built from a folder has a
generic body, so the signature is made from the root task's ``input.required`` /
``input.optional`` and attached as ``__signature__``. Every input defaults to ``None`` (so
``flow(context={...})`` keeps working); required ones say so in their description, and the
agent runtime still reports a missing required input (FP313). Prefect-free.
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


def input_names(config: TaskConfig) -> list[str]:
    """Declared input keys usable as parameter names (identifiers, not ``context``)."""
    if config.input is None:
        return []
    keys = dict.fromkeys([*config.input.required, *config.input.optional])
    return [key for key in keys if key.isidentifier() and key != "context"]


def input_descriptions(config: TaskConfig) -> dict[str, str]:
    """``{parameter: description}`` shown under each field of the Prefect UI form."""
    required = set(config.input.required) if config.input else set()
    return {
        key: ("required input" if key in required else "optional input")
        + " of the workflow (also accepted inside `context`)"
        for key in input_names(config)
    }


def parameter_signature(config: TaskConfig) -> inspect.Signature:
    """``(context=None, *, <inputs>=None)`` for the root task's config (``context`` stays the
    only positional parameter, as ``folder_to_flow``'s contract says)."""
    from pydantic import Field

    descriptions = input_descriptions(config)
    parameters = [
        inspect.Parameter(
            key,
            inspect.Parameter.KEYWORD_ONLY,
            default=Field(default=None, description=descriptions[key]),
            annotation=Any,
        )
        for key in input_names(config)
    ]
    return inspect.Signature([CONTEXT_PARAMETER, *parameters])


def merge_inputs(context: Mapping[str, Any] | None, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Initial context: ``context`` overlaid with the input parameters that were given."""
    merged = dict(context or {})
    merged.update({key: value for key, value in inputs.items() if value is not None})
    return merged


def with_input_signature(body: Callable[..., Any], config: TaskConfig) -> Callable[..., Any]:
    """Give ``body(context=None, **inputs)`` the root task's parameter signature, in place."""
    body.__signature__ = parameter_signature(config)  # type: ignore[attr-defined]
    return body
