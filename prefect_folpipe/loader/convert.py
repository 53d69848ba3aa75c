"""task.yaml + instructions.md <-> SKILL.md, as text (``folpipe convert``).

A SKILL.md front-matter holds task.yaml keys, so the conversion keeps the task.yaml text as it
is (comments and order included) and the instructions byte for byte:

* **task -> skill**: front-matter = the task.yaml text, preceded by ``name:`` and
  ``description:`` lines when task.yaml has none (Agent Skills wants both; the name is the one
  the task already has, so nothing changes). Those lines carry :data:`ADDED` so the way back
  drops them. Body = instructions.md.
* **skill -> task**: task.yaml = the front-matter without the :data:`ADDED` lines, and
  instructions.md = the body (none when it is empty). Keys that are not task.yaml keys move:
  the Agent Skills keys (``license``, ``metadata``, ...) become a comment block that the way
  back restores, and folpipe 0.1.8's forms are rewritten (``input: [list]`` ->
  ``input: {required: [...]}``, ``timeout:`` -> ``settings.timeout``). 0.1.8 wrote the
  task.yaml keys a SKILL.md cannot hold as ``# agentflow:`` comment lines; they are read back
  as **one** YAML document (0.1.8 parsed them line by line, which broke nested blocks such as
  ``conditions:``).

So task -> skill -> task gives back the same files, byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import ConfigError
from ._files import PREFIX
from .skills import SKILL_KEYS

ADDED = "# added by folpipe convert"
"""Marks a front-matter line that task -> skill added (skill -> task drops it)."""
KEPT = "# SKILL.md keys kept by folpipe convert:"
"""Heads the comment block holding Agent Skills keys in a converted task.yaml."""
LEGACY = "# agentflow:"
"""folpipe 0.1.8's prefix for task.yaml keys written into a SKILL.md as comments."""
_TOP_KEY = re.compile(r"^([A-Za-z_$][\w$-]*)\s*:")
_PLAIN = re.compile(r"[A-Za-z0-9_][\w .,()/-]*")


class ConvertError(ConfigError):
    """A folder that cannot be converted as asked (exit code 2)."""

    code = "FP180"


@dataclass(frozen=True)
class TaskFiles:
    """A task folder's task.yaml and instructions.md texts (``None``: no such file)."""

    task_yaml: str | None
    instructions: str | None


def default_name(folder_name: str) -> str:
    """The name a task folder gets without ``name:`` (its ``N_`` prefix dropped)."""
    return PREFIX.sub("", folder_name) or folder_name


def task_to_skill(files: TaskFiles, name: str) -> str:
    """The SKILL.md text of a task whose name is ``name``."""
    text = files.task_yaml or ""
    if text and not text.endswith("\n"):
        text += "\n"
    if any(line.strip() == "---" for line in text.splitlines()):
        raise ConvertError(
            "task.yaml holds a `---` line, which would end the SKILL.md front-matter",
            hint="remove the YAML document separator from task.yaml",
        )
    data = _mapping(_load(text), "task.yaml")
    restored, text = _unkeep(text)
    head = []
    if "name" not in data:
        head.append(f"name: {_scalar(name)}  {ADDED}\n")
    if "description" not in data:
        head.append(f"description: {_scalar(_describe(files.instructions, name))}  {ADDED}\n")
    front = "".join(head) + restored + text
    return f"---\n{front}---\n{files.instructions or ''}"


def skill_to_task(skill: str) -> TaskFiles:
    """The task.yaml and instructions.md texts of a SKILL.md."""
    lines = skill.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return TaskFiles(None, skill)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise ConvertError(
            "SKILL.md front-matter is not closed by a `---` line",
            hint="end the YAML front-matter with a line holding only ---",
        )
    front = [line for line in lines[1:end] if not line.rstrip("\n").endswith(ADDED)]
    body = "".join(lines[end + 1 :])
    task_yaml = _task_yaml(front)
    return TaskFiles(task_yaml if task_yaml.strip() else None, body if body.strip() else None)


def _task_yaml(front: list[str]) -> str:
    legacy = [line for line in front if line.startswith(LEGACY)]
    front = [line for line in front if not line.startswith(LEGACY)]
    text = "".join(front)
    data = _mapping(_load(text), "SKILL.md front-matter")
    moved = {key for key in data if key in SKILL_KEYS or key == "timeout"}
    if isinstance(data.get("input"), list):
        moved.add("input")
    if legacy:
        legacy_text = "".join(line[len(LEGACY) :] for line in legacy)
        extra = _mapping(_load(legacy_text), f"the `{LEGACY}` comment lines")
        moved.update(key for key in extra if key in data)
    else:
        extra = {}
    if not moved and not extra:
        return text
    blocks = _blocks(text)
    kept_text = "".join(chunk for key, chunk in blocks if key not in moved)
    updates = {**extra, **_rewritten(data, moved)}
    if "settings" in updates and any(key == "settings" for key, _ in blocks):
        kept_text = "".join(chunk for key, chunk in _blocks(kept_text) if key != "settings")
    skill_keys = {key: data[key] for key in SKILL_KEYS if key in data}
    out = _keep(skill_keys) + kept_text
    if updates:
        if out and not out.endswith("\n"):
            out += "\n"
        out += yaml.safe_dump(updates, sort_keys=False, allow_unicode=True)
    return out


def _rewritten(data: dict[str, Any], moved: set[str]) -> dict[str, Any]:
    """0.1.8's SKILL.md forms as task.yaml keys."""
    out: dict[str, Any] = {}
    if "input" in moved and isinstance(data.get("input"), list):
        out["input"] = {"required": list(data["input"])}
    if "timeout" in data:
        settings = dict(data.get("settings") or {})
        settings.setdefault("timeout", data["timeout"])
        out["settings"] = settings
    return out


def _blocks(text: str) -> list[tuple[str | None, str]]:
    """Top-level ``key: ...`` blocks of a YAML mapping text; comments and blank lines before a
    key belong to its block."""
    blocks: list[tuple[str | None, str]] = []
    pending: list[str] = []
    for line in text.splitlines(keepends=True):
        match = _TOP_KEY.match(line)
        if match:
            blocks.append((match.group(1), "".join(pending) + line))
            pending = []
        elif blocks and not (line.startswith("#") or not line.strip()):
            key, chunk = blocks[-1]
            blocks[-1] = (key, chunk + "".join(pending) + line)
            pending = []
        else:
            pending.append(line)
    if pending:
        blocks.append((None, "".join(pending)))
    return blocks


def _keep(skill_keys: dict[str, Any]) -> str:
    """Agent Skills keys as a comment block of task.yaml (task -> skill restores them)."""
    if not skill_keys:
        return ""
    dumped = yaml.safe_dump(skill_keys, sort_keys=False, allow_unicode=True)
    return KEPT + "\n" + "".join(f"# {line}" for line in dumped.splitlines(keepends=True))


def _unkeep(text: str) -> tuple[str, str]:
    """The Agent Skills keys kept in ``text`` (as YAML) and ``text`` without that block."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\n") != KEPT:
        return "", text
    end = 1
    while end < len(lines) and lines[end].startswith("# "):
        end += 1
    return "".join(line[2:] for line in lines[1:end]), "".join(lines[end:])


def _load(text: str) -> Any:
    try:
        return yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConvertError(f"invalid YAML: {exc}", hint="fix the YAML first") from None


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConvertError(f"{what} is not a mapping of keys", hint="fix the YAML first")
    return value


def _describe(instructions: str | None, name: str) -> str:
    """A one-line description: the instructions' first line of text, else the name."""
    for line in (instructions or "").splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return name


def _scalar(value: str) -> str:
    """``value`` as a one-line YAML scalar (plain when that reads back the same)."""
    if _PLAIN.fullmatch(value) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value, ensure_ascii=False)
