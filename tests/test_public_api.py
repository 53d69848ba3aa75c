"""The public API: ``prefect_folpipe.__all__`` is sorted and every name in it resolves."""

from __future__ import annotations

import subprocess
import sys

import pytest

import prefect_folpipe


def test_all_is_sorted_and_unique() -> None:
    names = list(prefect_folpipe.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", prefect_folpipe.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(prefect_folpipe, name) is not None
    assert name in dir(prefect_folpipe)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError):
        prefect_folpipe.no_such_name  # noqa: B018


def test_spec_layer_names_resolve_without_prefect() -> None:
    names = ["load_workflow", "validate_workflow", "Diagnostic", "tool", "ToolContext", "Hook"]
    code = (
        "import sys, prefect_folpipe\n"
        f"for name in {names!r}: getattr(prefect_folpipe, name)\n"
        "print('prefect' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
