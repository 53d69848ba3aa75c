"""Validation of the root ``deploy:`` block and of the scale-out settings (codes FP600-FP609).

Prefect-free on purpose (``folpipe validate`` must not pay for importing Prefect): cron strings
are checked by a small grammar that accepts what Prefect's cron schedule accepts (5 fields,
optional seconds and year fields, ``@daily``-style aliases, names, ranges, steps, ``L``, ``?``,
``N#K``); timezones against the IANA database; rrules with ``dateutil`` (a Prefect dependency).
``deploy.schedule`` problems found here are found again, with the same codes, by
``folpipe deploy`` for schedules given on the command line.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import Diagnostic, Severity
from ..workflow.config import DeployConfig, Schedule, TaskConfig

if TYPE_CHECKING:
    from ..loader import LoadResult

CRON_ALIASES = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True)
class _Field:
    """One cron field: its name, value range and the names it accepts."""

    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    specials: frozenset[str] = frozenset()


_MINUTE = _Field("minute", 0, 59)
_HOUR = _Field("hour", 0, 23)
_DOM = _Field("day of month", 1, 31, specials=frozenset({"?", "L"}))
_MONTH = _Field("month", 1, 12, _MONTHS)
_DOW = _Field("day of week", 0, 7, _DAYS, specials=frozenset({"?"}))
_SECOND = _Field("second", 0, 59)
_YEAR = _Field("year", 1970, 2099)
_LAYOUTS: dict[int, tuple[_Field, ...]] = {
    5: (_MINUTE, _HOUR, _DOM, _MONTH, _DOW),
    6: (_MINUTE, _HOUR, _DOM, _MONTH, _DOW, _SECOND),
    7: (_MINUTE, _HOUR, _DOM, _MONTH, _DOW, _SECOND, _YEAR),
}
_NTH_WEEKDAY = re.compile(r"^(\w+)#([1-5])$")


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a cron string Prefect accepts, or ``None`` when it is fine."""
    text = expression.strip()
    if text.lower() in CRON_ALIASES:
        return None
    if text.startswith("@"):
        return f"unknown alias {text!r} (use one of {', '.join(sorted(CRON_ALIASES))})"
    parts = text.split()
    layout = _LAYOUTS.get(len(parts))
    if layout is None:
        return f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
    for part, field in zip(parts, layout, strict=True):
        for item in part.split(","):
            problem = _item_problem(item, field)
            if problem:
                return f"bad {field.name} field {part!r}: {problem}"
    return None


def _item_problem(item: str, field: _Field) -> str | None:
    if item.upper() in field.specials:
        return None
    nth = _NTH_WEEKDAY.match(item) if field is _DOW else None
    if nth:
        return _value_problem(nth.group(1), field)
    base, _, step = item.partition("/")
    if step and not (step.isdigit() and int(step) >= 1):
        return f"step {step!r} must be a positive number"
    if base == "*":
        return None
    low, dash, high = base.partition("-")
    return _value_problem(low, field) or (_value_problem(high, field) if dash else None)


def _value_problem(token: str, field: _Field) -> str | None:
    lowered = token.lower()
    if lowered in field.names:
        return None
    if not token.isdigit():
        return f"{token!r} is not a number" + (
            f" or a name ({', '.join(field.names)})" if field.names else ""
        )
    if not field.low <= int(token) <= field.high:
        return f"{token} is outside {field.low}-{field.high}"
    return None


def timezone_problem(name: str) -> str | None:
    """Why ``name`` is not an IANA timezone, or ``None``."""
    from zoneinfo import available_timezones

    if name in available_timezones():
        return None
    return f"unknown timezone {name!r} (use an IANA name such as 'Europe/Paris' or 'UTC')"


def rrule_problem(text: str) -> str | None:
    """Why ``text`` is not an RFC 5545 recurrence rule, or ``None``."""
    try:
        from dateutil.rrule import rrulestr
    except ImportError:  # pragma: no cover - dateutil ships with prefect
        return None
    try:
        rrulestr(text, cache=True)
    except (ValueError, TypeError) as exc:
        return f"invalid rrule {text!r}: {exc}"
    return None


@dataclass(frozen=True)
class Problem:
    """One finding before it is placed in a file: code, message, hint and YAML key path."""

    code: str
    message: str
    hint: str
    loc: tuple[str | int, ...] = ()
    severity: Severity = Severity.ERROR


def schedule_problems(schedule: Schedule, loc: tuple[str | int, ...] = ()) -> list[Problem]:
    """Everything wrong with one schedule (``loc``: where the schedule sits in task.yaml)."""
    problems: list[Problem] = []
    kinds = [k for k in ("cron", "interval", "rrule") if getattr(schedule, k) is not None]
    if len(kinds) != 1:
        said = ", ".join(kinds) if kinds else "none of them"
        problems.append(
            Problem(
                "FP600",
                f"a schedule needs exactly one of cron, interval, rrule (got {said})",
                "e.g. `schedule: {cron: '0 3 * * *', timezone: UTC}` or `{interval: 3600}`",
                loc,
            )
        )
    if schedule.cron is not None and (why := cron_problem(schedule.cron)):
        problems.append(
            Problem(
                "FP601", f"invalid cron expression: {why}", "see `man 5 crontab`", (*loc, "cron")
            )
        )
    if schedule.rrule is not None and (why := rrule_problem(schedule.rrule)):
        problems.append(Problem("FP602", why, "e.g. 'FREQ=DAILY;BYHOUR=3'", (*loc, "rrule")))
    if schedule.timezone is not None and (why := timezone_problem(schedule.timezone)):
        hint = "list them with `python -c 'import zoneinfo; print(zoneinfo.available_timezones())'`"
        problems.append(Problem("FP603", why, hint, (*loc, "timezone")))
    return problems


def declared_inputs(config: TaskConfig) -> tuple[str, ...]:
    """The root task's declared input keys (required first), i.e. the flow's parameters."""
    if config.input is None:
        return ()
    return tuple(dict.fromkeys([*config.input.required, *config.input.optional]))


# parameters every folpipe flow accepts besides the declared inputs
FLOW_PARAMETERS = ("context", "fresh", "reuse_checkpoints", "rerun_from", "restore_from")
GENERIC_FLOW_PARAMETERS = (
    "path",
    "context",
    "fresh",
    "reuse_checkpoints",
    "rerun_from",
    "restore_from",
    "provider",
    "replies",
    "result_storage",
)


def deploy_block_problems(config: TaskConfig) -> list[Problem]:
    """Problems of the root task.yaml ``deploy:`` block."""
    deploy: DeployConfig | None = config.deploy
    if deploy is None:
        return []
    problems = schedule_problems(deploy.schedule, ("deploy", "schedule")) if deploy.schedule else []
    known = set(declared_inputs(config)) | set(FLOW_PARAMETERS)
    for key in deploy.parameters:
        if key not in known:
            declared = ", ".join(sorted(known - set(FLOW_PARAMETERS))) or "none"
            problems.append(
                Problem(
                    "FP604",
                    f"deploy.parameters names {key!r}, which the root task does not declare "
                    f"as input (declared: {declared})",
                    f"add {key!r} to `input.required` or `input.optional` of the root task, "
                    "or pass it under `context`",
                    ("deploy", "parameters", key),
                )
            )
    if deploy.work_pool is not None and not deploy.work_pool.strip():
        problems.append(
            Problem(
                "FP606",
                "deploy.work_pool is empty",
                "name a work pool or drop the key",
                ("deploy", "work_pool"),
            )
        )
    return problems


def is_scheduler_address(text: str) -> bool:
    """``tcp://host:8786``-like: a scheme, then a host."""
    return re.match(r"^[a-z][a-z0-9+]*://[^/\s]+", text) is not None


def task_runner_problems(config: TaskConfig) -> list[Problem]:
    """Scale-out settings: ``task_runner: dask`` needs prefect-dask; addresses need a scheme."""
    settings = config.settings
    problems: list[Problem] = []
    if settings.task_runner == "dask" and importlib.util.find_spec("prefect_dask") is None:
        problems.append(
            Problem(
                "FP607",
                "settings.task_runner is 'dask' but prefect-dask is not installed",
                "pip install 'prefect-folpipe[dask]'",
                ("settings", "task_runner"),
            )
        )
    address = settings.dask_address
    if address is not None and not is_scheduler_address(address):
        problems.append(
            Problem(
                "FP608",
                f"settings.dask_address {address!r} is not a scheduler address",
                "e.g. 'tcp://10.0.0.5:8786'; leave it out to start a local cluster",
                ("settings", "dask_address"),
            )
        )
    return problems


def dependency_problems(config: TaskConfig) -> list[Problem]:
    """Each ``dependencies:`` entry must be a PEP 508 requirement (what pip/uv accept)."""
    if not config.dependencies:  # most tasks: no import of ``packaging`` (0.1 s) for them
        return []
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # pragma: no cover - packaging ships with prefect
        return []
    problems: list[Problem] = []
    for index, entry in enumerate(config.dependencies):
        try:
            Requirement(entry)
        except InvalidRequirement as exc:
            problems.append(
                Problem(
                    "FP609",
                    f"dependency {entry!r} is not a valid requirement: {str(exc).splitlines()[0]}",
                    "use pip syntax, e.g. 'requests>=2.31' or 'beautifulsoup4'",
                    ("dependencies", index),
                )
            )
    return problems


def config_problems(config: TaskConfig, *, is_root: bool) -> list[Problem]:
    """Every deploy / scale-out / dependency problem of one task's config."""
    problems: list[Problem] = []
    if config.deploy is not None and not is_root:
        problems.append(
            Problem(
                "FP605",
                "a `deploy:` block only counts in the root task.yaml; this one is ignored",
                "move it to the workflow root's task.yaml",
                ("deploy",),
                Severity.WARNING,
            )
        )
    elif is_root:
        problems += deploy_block_problems(config)
    return [*problems, *task_runner_problems(config), *dependency_problems(config)]


def config_diagnostics(
    config: TaskConfig,
    *,
    is_root: bool,
    file: str | None = None,
    line: int | None = None,
    task: str | None = None,
) -> list[Diagnostic]:
    """:func:`config_problems` as diagnostics, all placed at ``file:line``."""
    return [
        Diagnostic(p.code, p.message, file, line, task, p.hint, p.severity)
        for p in config_problems(config, is_root=is_root)
    ]


def check_deploy(result: LoadResult) -> Iterator[Diagnostic]:
    """Validation rule (``validate.RULES``): deploy block, scale-out settings, dependencies."""
    from ._common import at

    for task in result.all_tasks():
        for p in config_problems(task.config, is_root=task.path == ""):
            yield at(result, task, p.code, p.message, p.loc, p.hint, p.severity)
