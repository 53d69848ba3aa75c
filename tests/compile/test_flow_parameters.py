"""A run's parameters as the API stores them: what Prefect's own encoder gives, without
importing FastAPI for a plain JSON context (a tenth of a second of ``folpipe run``)."""

from __future__ import annotations

import enum
import subprocess
import sys
from pathlib import PurePosixPath
from typing import Any

import pytest
from prefect import Flow

from prefect_folpipe.compile.api import WorkflowFlow


async def _body(context: dict[str, Any] | None = None, **inputs: Any) -> None:
    return None


class Colour(enum.StrEnum):
    RED = "red"


PLAIN = [
    {},
    {"topic": "x", "n": 3, "ratio": 0.5, "ok": True, "none": None},
    {"nested": {"list": [1, [2, {"deep": "yes"}]], "tuple": (1, 2)}},
    {1: "int key", 2.5: "float key", None: "none key", False: "bool key"},
    ["a", ("b", "c")],
]
OTHER = [
    {"colour": Colour.RED},  # an enum: its value
    {"path": PurePosixPath("/tmp/x")},  # a path: its text
    {"_sa_state": 1, "kept": 2},  # Prefect's encoder drops keys that start with _sa
    {"set": {1, 2}},
    {(1, 2): "a tuple key"},
]


@pytest.mark.parametrize("value", PLAIN + OTHER)
def test_parameters_are_serialized_as_prefect_serializes_them(value: Any) -> None:
    ours = WorkflowFlow(_body, name="params", validate_parameters=False)
    prefects = Flow(_body, name="params", validate_parameters=False)
    parameters = {"context": value, "topic": value}
    assert repr(ours.serialize_parameters(parameters)) == repr(
        prefects.serialize_parameters(parameters)
    )
    assert list(ours.serialize_parameters(parameters)) == ["context", "topic"]


def test_a_plain_context_is_copied_not_shared() -> None:
    flow = WorkflowFlow(_body, name="params", validate_parameters=False)
    context = {"list": [1, 2], "inner": {"a": 1}}
    serialized = flow.serialize_parameters({"context": context})["context"]
    assert serialized == context
    assert serialized["list"] is not context["list"]
    assert serialized["inner"] is not context["inner"]


def test_a_plain_context_does_not_import_fastapi() -> None:
    code = (
        "import sys\n"
        "from prefect_folpipe.compile.api import WorkflowFlow\n"
        "async def body(context=None): ...\n"
        "flow = WorkflowFlow(body, name='x', validate_parameters=False)\n"
        "flow.serialize_parameters({'context': {'a': [1, {'b': None}]}})\n"
        "print('fastapi' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
