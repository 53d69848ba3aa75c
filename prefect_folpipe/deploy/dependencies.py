"""Third-party packages a workflow's tools and hooks need (task.yaml ``dependencies:``).

``collect_dependencies`` gathers them from every enabled task, deduplicated;
``install_command`` picks ``uv pip install`` when uv is available and ``pip install`` otherwise,
always into the running interpreter.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import ConfigError
from ..workflow.tree import Workflow


def _normalised(requirement: str) -> str:
    """A key under which equivalent spellings of one requirement compare equal."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        return " ".join(requirement.split()).lower()
    parsed.name = canonicalize_name(parsed.name)
    return str(parsed)


def dedupe(requirements: Iterable[str]) -> list[str]:
    """Requirements without repeats (``Requests>=2`` and ``requests >= 2`` are one), in order."""
    seen: dict[str, str] = {}
    for requirement in requirements:
        text = requirement.strip()
        if text:
            seen.setdefault(_normalised(text), text)
    return list(seen.values())


def collect_dependencies(workflow: Workflow) -> list[str]:
    """``dependencies`` of every enabled task in the tree, root first, deduplicated."""
    return dedupe(dep for task in workflow.tasks() for dep in task.config.dependencies)


def _find_uv(python: str) -> str | None:
    beside = Path(python).parent / "uv"
    if beside.is_file():
        return str(beside)
    return shutil.which("uv")


def _has_pip(python: str) -> bool:
    probe = [
        python,
        "-c",
        "import importlib.util,sys; sys.exit(not importlib.util.find_spec('pip'))",
    ]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def install_command(packages: Sequence[str], *, python: str | None = None) -> list[str]:
    """The command that installs ``packages`` into ``python`` (default: this interpreter)."""
    python = python or sys.executable
    uv = _find_uv(python)
    if uv:
        return [uv, "pip", "install", "--python", python, *packages]
    if _has_pip(python):
        return [python, "-m", "pip", "install", "--disable-pip-version-check", *packages]
    raise ConfigError(
        f"cannot install {', '.join(packages)}: neither uv nor pip is available for {python}",
        code="FP621",
        hint="install uv (https://docs.astral.sh/uv/) or pip into this environment",
    )


def install(packages: Sequence[str], *, python: str | None = None) -> list[str]:
    """Install ``packages``; returns the command run. Raises ConfigError FP620 when it fails."""
    if not packages:
        return []
    command = install_command(packages, python=python)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise ConfigError(
            f"installing dependencies failed (exit {done.returncode}):\n{tail}",
            code="FP620",
            hint="check the `dependencies:` entries of your task.yaml files",
        )
    return command


def missing(requirements: Iterable[str]) -> list[str]:
    """The requirements not satisfied by what this interpreter has installed."""
    requirements = list(requirements)
    if not requirements:  # most workflows: nothing to parse, nothing to import
        return []
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import InvalidRequirement, Requirement

    absent: list[str] = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            absent.append(text)  # let the installer report it
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            absent.append(text)
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            absent.append(text)
    return absent


def ensure_installed(workflow: Workflow) -> list[str]:
    """Install the workflow's declared dependencies that are missing; returns those installed."""
    needed = missing(collect_dependencies(workflow))
    install(needed)
    return needed
