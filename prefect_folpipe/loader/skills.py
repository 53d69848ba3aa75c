"""SKILL.md front-matter: task.yaml keys, plus what Agent Skills and folpipe 0.1.8 write there.

A SKILL.md folder is a task whose front-matter holds task.yaml keys and whose body holds the
instructions (an empty body: no instructions). On top of task.yaml, the front-matter takes:

* the Agent Skills keys (https://agentskills.io/specification) ``license``,
  ``compatibility``, ``metadata`` and ``allowed-tools``: accepted and not used by the run;
* folpipe 0.1.8's forms: ``input:`` as a list (the required keys) and a top-level
  ``timeout:`` (``settings.timeout``).

The Agent Skills rules are checked as warnings (FP170), since folders written for folpipe 0.1.8
break them routinely: ``name`` (1-64 lowercase letters, digits and hyphens, no leading,
trailing or double hyphen, equal to the folder name), ``description`` (1-1024 characters),
``compatibility`` (at most 500 characters), ``metadata`` (a string-to-string map).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import Diagnostic, Severity
from ._yaml import SourceMap

SKILL_KEYS: tuple[str, ...] = ("license", "compatibility", "metadata", "allowed-tools")
"""Agent Skills keys a SKILL.md may hold besides ``name`` and ``description``."""
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
_SPEC = "Agent Skills (agentskills.io/specification)"


def skill_config(
    data: dict[str, Any], source: SourceMap, folder_name: str, task: str
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The task.yaml keys of a SKILL.md front-matter, and warnings about the Agent Skills
    rules. 0.1.8's ``input: [list]`` and ``timeout:`` become task.yaml form."""
    out: list[Diagnostic] = []

    def warn(message: str, loc: tuple[str | int, ...], hint: str) -> None:
        out.append(
            Diagnostic(
                "FP170", message, source.file, source.line(loc), task, hint, Severity.WARNING
            )
        )

    _check_skill_rules(data, folder_name, warn)
    config = {k: v for k, v in data.items() if k not in SKILL_KEYS}
    if isinstance(config.get("input"), list):
        config["input"] = {"required": config["input"]}
    if "timeout" in config:
        timeout = config.pop("timeout")
        settings = config.get("settings")
        settings = dict(settings) if isinstance(settings, dict) else {}
        if "timeout" in settings:
            warn(
                "`timeout:` and `settings.timeout` are both set; `settings.timeout` is used",
                ("timeout",),
                "keep one of the two",
            )
        else:
            settings["timeout"] = timeout
        config["settings"] = settings
    return config, out


def _check_skill_rules(data: dict[str, Any], folder_name: str, warn: Any) -> None:
    name = data.get("name")
    if name is None:
        warn(f"SKILL.md has no `name` ({_SPEC} requires one)", (), f"add `name: {folder_name}`")
    elif not isinstance(name, str) or len(name) > MAX_NAME or not NAME.match(name):
        warn(
            f"SKILL.md name {name!r} breaks the {_SPEC} rule: 1-{MAX_NAME} lowercase letters, "
            "digits and single hyphens",
            ("name",),
            "e.g. `name: fetch-data` (folpipe accepts other names; other tools may not)",
        )
    elif name != folder_name:
        warn(
            f"SKILL.md name {name!r} differs from its folder {folder_name!r} ({_SPEC} wants "
            "them equal)",
            ("name",),
            f"rename the folder to {name!r}, or set `name: {folder_name}`",
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        warn(
            f"SKILL.md has no `description` ({_SPEC} requires one)",
            ("description",) if "description" in data else (),
            "say what the skill does and when to use it",
        )
    elif len(description) > MAX_DESCRIPTION:
        warn(
            f"SKILL.md description has {len(description)} characters (at most {MAX_DESCRIPTION})",
            ("description",),
            "shorten it; put details in the body",
        )
    compatibility = data.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY
    ):
        warn(
            f"SKILL.md compatibility must be text of at most {MAX_COMPATIBILITY} characters",
            ("compatibility",),
            "shorten it",
        )
    metadata = data.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        warn(
            "SKILL.md metadata must map strings to strings",
            ("metadata",),
            'quote the values, e.g. `version: "1.0"`; write lists as text',
        )
