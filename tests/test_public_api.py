"""The public API: ``prefect_folpipe.__all__`` is sorted and every name in it resolves."""

from __future__ import annotations

import subprocess
import sys

import pytest

import prefect_folpipe

PENDING: frozenset[str] = frozenset(
    {"Hook", "RunResult", "ToolContext", "folder_to_flow", "run_workflow", "tool"}
    | {"load_workflow", "validate_workflow"}
)
"""Names whose modules may not be committed yet: skipped only while they fail to resolve.

Emptied once every part has landed, which makes the test strict."""


def _resolve(name: str) -> object:
    try:
        return getattr(prefect_folpipe, name)
    except (AttributeError, ImportError):
        if name in PENDING:
            pytest.skip(f"{name}: its module is not committed yet")
        raise


def test_all_is_sorted_and_unique() -> None:
    names = list(prefect_folpipe.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))


def _resolvable(name: str) -> bool:
    try:
        getattr(prefect_folpipe, name)
    except (AttributeError, ImportError):
        if name in PENDING:
            return False
        raise
    return True


@pytest.mark.parametrize("name", prefect_folpipe.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert _resolve(name) is not None
    assert name in dir(prefect_folpipe)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError):
        prefect_folpipe.no_such_name  # noqa: B018


def test_spec_layer_names_resolve_without_prefect() -> None:
    names = [
        name
        for name in ("load_workflow", "validate_workflow", "Diagnostic", "tool", "ToolContext")
        if _resolvable(name)
    ]
    code = (
        "import sys, prefect_folpipe\n"
        f"for name in {names!r}: getattr(prefect_folpipe, name)\n"
        "print('prefect' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
