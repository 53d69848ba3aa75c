"""Validation: every author mistake of a workflow folder, found in one pass.

``load_workflow`` composes the two and raises once. Loading (``loader.load``) reports what it
meets while reading: YAML syntax, unknown keys, wrong
types, names, includes, providers, tools. Then each rule of :data:`RULES` — a small pure
function ``(LoadResult) -> Iterable[Diagnostic]`` — looks at the loaded tree, in order. Add a
rule by writing a module with one such function and appending it here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from ..errors import Diagnostic, Severity, WorkflowValidationError
from ..loader import LoadResult, has_code_tools, load, load_vetted
from ..workflow.tree import Workflow
from .approval_gates import check_approvals
from .backends import check_backends
from .checkpoints import check_checkpoint_scope
from .conditions import check_conditions
from .dependencies import check_dependencies
from .deploy_rules import check_deploy
from .failure import check_failure_policy
from .hook_files import check_hook_files
from .json_values import check_json_values
from .loops import check_loops
from .outputs import check_output_names
from .sdks import check_installed_sdks
from .structure import check_empty_tasks

Rule = Callable[[LoadResult], Iterable[Diagnostic]]

RULES: tuple[Rule, ...] = (
    check_empty_tasks,
    check_dependencies,
    check_loops,
    check_conditions,
    check_failure_policy,
    check_output_names,
    check_approvals,
    check_deploy,
    check_checkpoint_scope,
    check_backends,
    check_hook_files,
    check_json_values,
    check_installed_sdks,
)

__all__ = [
    "RULES",
    "Rule",
    "check",
    "has_code_tools",
    "load_workflow",
    "run_rules",
    "validate_workflow",
]


def run_rules(result: LoadResult, rules: Iterable[Rule] = RULES) -> list[Diagnostic]:
    """Diagnostics of every rule over a loaded workflow (none when it could not load)."""
    if result.workflow is None:
        return []
    return [diagnostic for rule in rules for diagnostic in rule(result)]


def check(
    path: str | Path, *, import_tools: bool = True, content_hashes: bool = True
) -> tuple[LoadResult, list[Diagnostic]]:
    """Load and run every rule: the result plus all diagnostics, errors first
    (``content_hashes``: see ``loader.load``)."""
    result = load(path, import_tools=import_tools, content_hashes=content_hashes)
    diagnostics = [*result.diagnostics, *run_rules(result)]
    return result, by_severity(diagnostics)


def load_workflow(path: str | Path, *, import_tools: bool = True) -> Workflow:
    """Load and validate a workflow folder; raise ``WorkflowValidationError`` carrying every
    diagnostic when there is any error (warnings stay on ``Workflow.warnings``).

    This is the loader of a run: it imports the workflow's tool code (tools.md python blocks,
    ``tools/*.py``) so the model gets the real functions' schemas, but only after the folder
    passed the whole static validation (nothing of an invalid folder runs).
    ``import_tools=False`` reads that code without running it (``folpipe tree``, ``graph``,
    ``plan``, ``status``)."""
    if import_tools:  # vetted first: nothing of a folder with an error is imported
        result, diagnostics = load_vetted(path, run_rules)
        diagnostics = by_severity(diagnostics)
    else:
        result, diagnostics = check(path, import_tools=False)
    if result.workflow is None or any(d.severity == Severity.ERROR for d in diagnostics):
        raise WorkflowValidationError(diagnostics)
    warnings = tuple(d for d in diagnostics if d.severity == Severity.WARNING)
    return replace(result.workflow, warnings=warnings)


def validate_workflow(path: str | Path, *, import_tools: bool = False) -> list[Diagnostic]:
    """Every problem of the workflow folder at ``path``, errors first; never raises for
    author mistakes (an unexpected failure becomes diagnostic FP190).

    Safe on an untrusted folder: the workflow's code is read, never executed (tool
    signatures from the source, imports located without importing them). ``import_tools=True``
    imports the tool code as a run would (``folpipe validate --import-tools``)."""
    try:
        return check(path, import_tools=import_tools, content_hashes=False)[1]
    except Exception as exc:  # the validator reports, it does not crash
        return [internal_error(exc)]


def by_severity(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Errors first, then warnings; the order found is kept within each group."""
    return sorted(diagnostics, key=lambda d: d.severity != Severity.ERROR)


def internal_error(exc: BaseException) -> Diagnostic:
    return Diagnostic(
        "FP190",
        f"internal error while validating: {type(exc).__name__}: {exc}",
        hint="this is a bug in prefect_folpipe; please report it with the workflow folder",
    )
