"""Hooks of a task folder, found and checked without running them.

``hooks/pre_run`` and ``hooks/post_run`` (``.py`` or ``.sh``); ``tools.hooks`` runs them.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from .._process.files import read_workflow_file
from ..errors import Diagnostic, did_you_mean
from .tools import diagnostic

STAGES = ("pre_run", "post_run")
SUFFIXES = (".py", ".sh")


def discover_hooks(task_dir: str | Path) -> dict[str, Path]:
    """``{"pre_run": path, "post_run": path}`` for the hooks present (``.py`` wins over ``.sh``)."""
    folder = Path(task_dir) / "hooks"
    found: dict[str, Path] = {}
    if not folder.is_dir():
        return found
    for stage in STAGES:
        for suffix in SUFFIXES:
            candidate = folder / f"{stage}{suffix}"
            if candidate.is_file():
                found[stage] = candidate.absolute()
                break
    return found


def check_hooks(task_dir: str | Path, *, owner: str) -> list[Diagnostic]:
    """Author mistakes in ``hooks/`` found without running anything.

    FP225 a Python hook that does not parse (error); FP226 both ``.py`` and ``.sh`` for one
    stage (warning: the ``.py`` one runs); FP227 a file in ``hooks/`` that is no hook
    (warning, with a did-you-mean); FP228 a Python hook defining neither ``run`` nor a class
    (error).
    """
    hooks_dir = os.path.join(task_dir, "hooks")
    if not os.path.isdir(hooks_dir):  # most tasks: no Path objects for them
        return []
    folder = Path(hooks_dir)
    diagnostics: list[Diagnostic] = []
    known = [f"{stage}{suffix}" for stage in STAGES for suffix in SUFFIXES]
    for stage in STAGES:
        if all((folder / f"{stage}{suffix}").is_file() for suffix in SUFFIXES):
            diagnostics.append(
                diagnostic(
                    "FP226",
                    f"hooks/{stage}.py and hooks/{stage}.sh both exist; only the .py one runs",
                    folder / f"{stage}.sh",
                    None,
                    owner,
                    warning=True,
                )
            )
    for entry in sorted(folder.iterdir()):
        if entry.name in known:
            if entry.suffix == ".py":
                diagnostics.extend(_check_python_hook(entry, owner))
            continue
        if entry.name.startswith((".", "_")) or not entry.is_file():
            continue
        diagnostics.append(
            diagnostic(
                "FP227",
                f"hooks/{entry.name} is not a hook and is never run",
                entry,
                None,
                owner,
                did_you_mean(entry.name, known) or f"hooks are {', '.join(known)}",
                warning=True,
            )
        )
    return diagnostics


def _check_python_hook(path: Path, owner: str) -> list[Diagnostic]:
    try:
        tree = ast.parse(read_workflow_file(path).decode("utf-8"), filename=str(path))
    except SyntaxError as exc:
        return [diagnostic("FP225", f"syntax error: {exc.msg}", path, exc.lineno, owner)]
    except (OSError, UnicodeDecodeError) as exc:
        return [diagnostic("FP225", f"cannot read the hook: {exc}", path, None, owner)]
    functions = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    has_class = any(isinstance(node, ast.ClassDef) for node in tree.body)
    if "run" in functions or has_class or _assigns_run(tree):
        return []
    return [
        diagnostic(
            "FP228",
            f"hooks/{path.name} defines neither run(ctx, task) nor a Hook subclass",
            path,
            None,
            owner,
            "add 'def run(ctx, task): ...'",
        )
    ]


def _assigns_run(tree: ast.Module) -> bool:
    """``from x import run`` or ``run = ...`` at module level."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(
            (alias.asname or alias.name) == "run" for alias in node.names
        ):
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "run" for target in node.targets
        ):
            return True
    return False
