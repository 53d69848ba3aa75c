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


@pytest.mark.slow
def test_spec_layer_names_resolve_without_prefect() -> None:
    names = ["load_workflow", "validate_workflow", "Diagnostic", "tool", "ToolContext", "Hook"]
    code = (
        "import sys, prefect_folpipe\n"
        f"for name in {names!r}: getattr(prefect_folpipe, name)\n"
        "print('prefect' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


PROVIDER_AUTHOR_TYPES = ["Provider", "ModelRequest", "ModelResponse", "ToolCall"]
PROVIDER_AUTHOR_TYPES += ["ToolResultsMessage", "Usage"]


@pytest.mark.parametrize("name", PROVIDER_AUTHOR_TYPES)
def test_the_provider_authors_types_have_one_public_home(name: str) -> None:
    import prefect_folpipe.providers as home

    assert name in home.__all__
    assert getattr(home, name).__module__.startswith("prefect_folpipe.")


def test_the_generic_flow_has_its_own_name_and_the_old_entrypoint_still_loads() -> None:
    from prefect.flows import load_flow_from_entrypoint

    new = load_flow_from_entrypoint("prefect_folpipe.flows:run_workflow_folder")
    old = load_flow_from_entrypoint("prefect_folpipe.flows:run_workflow")
    assert new.fn is old.fn
    assert new.fn.__name__ == "run_workflow_folder"
    from prefect_folpipe.compile import api

    assert api.run_workflow is not new  # the Python API's run_workflow is a plain function
