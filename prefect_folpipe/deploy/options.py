"""Command-line deploy options turned into checked values (Prefect-free).

Shared by ``folpipe deploy``, ``folpipe deploy init`` and ``folpipe serve``: a schedule from
``--cron`` / ``--interval`` or the root task.yaml ``deploy.schedule``; ``--param k=v`` pairs;
the workflow folder itself. Every problem is a ``ConfigError`` with an FP6xx code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._process.wording import noun
from ..compile.signature import RUN_PARAMETERS, input_names
from ..errors import ConfigError
from ..validate.deploy_rules import GENERIC_FLOW_PARAMETERS, schedule_problems
from ..workflow.config import Schedule
from ..workflow.tree import Workflow


def workflow_folder(path: str | Path) -> Path:
    """The workflow folder as an absolute path; FP610 when it does not exist."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ConfigError(
            f"workflow folder {str(path)!r} {what}",
            code="FP610",
            hint="pass the folder that holds the root task.yaml / instructions.md",
        )
    return folder.resolve()


def load(path: str | Path, *, import_tools: bool = True) -> Workflow:
    """Load (and validate) the workflow at ``path``; raises FP610 or WorkflowValidationError.
    ``import_tools=False``: its tool code is read, never run (``status``, ``install-deps``)."""
    from ..validate import load_workflow

    return load_workflow(workflow_folder(path), import_tools=import_tools)


def check_schedule(schedule: Schedule, *, origin: str) -> Schedule:
    """Raise the first problem of ``schedule`` as a ConfigError (same codes as validate)."""
    problems = schedule_problems(schedule)
    if problems:
        first = problems[0]
        raise ConfigError(f"{origin}: {first.message}", code=first.code, hint=first.hint)
    return schedule


def resolve_schedule(
    workflow: Workflow,
    *,
    cron: str | None = None,
    interval: float | None = None,
    rrule: str | None = None,
    timezone: str | None = None,
    use_declared: bool = True,
) -> Schedule | None:
    """The command-line schedule if one is given, else the root ``deploy.schedule`` (or None)."""
    given = [name for name, value in (("--cron", cron), ("--interval", interval)) if value]
    if len(given) > 1 or (given and rrule):
        raise ConfigError(
            f"give at most one of --cron, --interval, --rrule (got {', '.join(given)})",
            code="FP611",
            hint="one deployment has one schedule here; add more in prefect.yaml",
        )
    if interval is not None and interval <= 0:
        raise ConfigError(
            f"--interval must be a positive number of seconds, got {interval:g}",
            code="FP611",
            hint="e.g. --interval 3600",
        )
    if cron or interval or rrule:
        schedule = Schedule(cron=cron, interval=interval, rrule=rrule, timezone=timezone)
        return check_schedule(schedule, origin="command line schedule")
    deploy = workflow.root.config.deploy
    if use_declared and deploy is not None and deploy.schedule is not None:
        return check_schedule(deploy.schedule, origin="root task.yaml deploy.schedule")
    if timezone:
        raise ConfigError(
            "--timezone needs --cron, --interval or --rrule",
            code="FP611",
            hint="e.g. --cron '0 3 * * *' --timezone Europe/Paris",
        )
    return None


def parse_value(text: str) -> Any:
    """A ``--param`` value: JSON when it parses (numbers, booleans, lists...), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_params(pairs: Iterable[str]) -> dict[str, Any]:
    """``["k=v", ...]`` -> ``{k: v}``; FP612 for an entry without ``=``."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"--param {pair!r} is not key=value",
                code="FP612",
                hint='e.g. --param topic=prefect --param \'context={"lang": "en"}\'',
            )
        parsed[key.strip()] = parse_value(value)
    return parsed


def flow_parameter_names(workflow: Workflow, *, generic: bool) -> tuple[str, ...]:
    """Parameters the deployed flow accepts."""
    if generic:
        return GENERIC_FLOW_PARAMETERS
    return (*input_names(workflow.root.config), "context", *RUN_PARAMETERS)


def deployment_parameters(
    workflow: Workflow, given: dict[str, Any], *, generic: bool
) -> dict[str, Any]:
    """Default parameters of a deployment: ``deploy.parameters`` overlaid with ``--param``.

    For the generic flow, ``path`` is the workflow folder and input names go into ``context``.
    Unknown names are FP612.
    """
    deploy = workflow.root.config.deploy
    merged = {**(deploy.parameters if deploy else {}), **given}
    inputs = set(input_names(workflow.root.config))
    accepted = flow_parameter_names(workflow, generic=generic)
    _reject_unknown(merged, accepted=(*accepted, *(inputs if generic else ())))
    if not generic:
        return merged
    context = dict(merged.pop("context", None) or {})
    context.update({key: merged.pop(key) for key in list(merged) if key in inputs})
    parameters: dict[str, Any] = {"path": str(workflow.root_dir.resolve()), **merged}
    if context:
        parameters["context"] = context
    return parameters


def _reject_unknown(parameters: dict[str, Any], *, accepted: Sequence[str]) -> None:
    unknown = [key for key in parameters if key not in accepted]
    if unknown:
        raise ConfigError(
            f"unknown {noun(len(unknown), 'parameter')} {', '.join(map(repr, unknown))}; "
            "the flow accepts "
            f"{', '.join(accepted)}",
            code="FP612",
            hint="declare workflow inputs under `input:` in the root task.yaml, "
            "or pass them inside --param context=...",
        )


@dataclass(frozen=True)
class DeployRequest:
    """What to deploy, after the command line was parsed and checked."""

    name: str | None = None
    pool: str | None = None
    schedule: Schedule | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    generic: bool = False
    paused: bool = False


def resolve_pool(workflow: Workflow, pool: str | None) -> str:
    """``--pool`` or the root ``deploy.work_pool``; FP614 when neither says."""
    deploy = workflow.root.config.deploy
    chosen = pool or (deploy.work_pool if deploy else None)
    if not chosen:
        raise ConfigError(
            "no work pool: pass --pool or set `deploy: {work_pool: ...}` in the root task.yaml",
            code="FP614",
            hint="`prefect work-pool create local --type process`, or use `folpipe serve` "
            "to run without a pool",
        )
    return chosen


BANNED_NAME_CHARACTERS = "/%&><"


def deployment_name(workflow: Workflow, name: str | None) -> str:
    """``--name``, else ``deploy.name``, else the workflow's name as a slug; FP623 when it
    holds a character Prefect refuses in names (``/ % & > <``)."""
    from .project import default_deployment_name

    chosen = name or default_deployment_name(workflow)
    bad = sorted({c for c in chosen if c in BANNED_NAME_CHARACTERS})
    if bad or not chosen.strip():
        raise ConfigError(
            f"deployment name {chosen!r} is not allowed"
            + (f" (contains {' '.join(bad)})" if bad else ""),
            code="FP623",
            hint="use letters, digits, '-', '_' or spaces",
        )
    return chosen
