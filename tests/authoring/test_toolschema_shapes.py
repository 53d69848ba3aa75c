"""The schema of a tool's parameters is generated once per shape and renamed (issue 15): it is
exactly what pydantic generates for the tool itself, and the arguments' model is built only
when the tool is called."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from prefect_folpipe.authoring import _schema as toolschema
from prefect_folpipe.authoring._schema import (
    UNKNOWN_DEFAULT,
    Param,
    ParsedDocstring,
    function_schema,
    parameters_schema,
)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@dataclass
class Box:
    width: float


SHAPES: list[list[Param]] = [
    [Param("query", str), Param("limit", int, 10)],
    [Param("q", str, "x"), Param("flag", bool, False), Param("ratio", float, 0.5)],
    [Param("items", list[str]), Param("mapping", dict[str, int], None)],
    [Param("maybe", int | None, None), Param("choice", Literal["a", "b"], "a")],
    [Param("colour", Colour, Colour.RED), Param("point", Point), Param("box", Box)],
    [Param("anything", Any), Param("later", str, UNKNOWN_DEFAULT)],
    [Param("tagged", Annotated[str, Field(description="from the type")])],
    [Param("tagged", Annotated[int, Field(ge=1)], 3)],
    [Param("listed", list, [1, 2])],
    [],
]


def _pydantic(params: list[Param], doc: ParsedDocstring, extra: bool) -> dict[str, Any]:
    """What pydantic generates for this exact function (names and descriptions included)."""
    named = [(p.name, doc.params.get(p.name)) for p in params]
    schema = toolschema._schema("fn", params, named, extra)
    for param in params:
        if param.default is UNKNOWN_DEFAULT:
            schema["properties"][param.name].pop("default", None)
    return schema


@pytest.mark.parametrize("params", SHAPES)
@pytest.mark.parametrize("described", [False, True])
@pytest.mark.parametrize("extra", [False, True])
def test_a_renamed_shape_is_what_pydantic_generates(params, described, extra) -> None:
    doc = ParsedDocstring("", {p.name: f"About {p.name}." for p in params} if described else {})
    expected = _pydantic(params, doc, extra)
    first = parameters_schema("one", params, doc, accepts_extra=extra)
    renamed = [Param(f"{p.name}_2", p.annotation, p.default) for p in params]
    doc2 = ParsedDocstring("", {f"{k}_2": v for k, v in doc.params.items()})
    second = parameters_schema("two", renamed, doc2, accepts_extra=extra)
    assert first == expected
    assert second == _pydantic(renamed, doc2, extra)
    assert list(first["properties"]) == [p.name for p in params]  # pydantic's order kept
    pairs = zip(first["properties"].values(), expected["properties"].values(), strict=True)
    for ours, theirs in pairs:
        assert list(ours) == list(theirs)  # the same keys in the same order


def test_each_shape_is_generated_once(monkeypatch) -> None:
    calls: list[str] = []
    real = toolschema._schema

    def counting(function: str, *args: Any) -> dict[str, Any]:
        calls.append(function)
        return real(function, *args)

    monkeypatch.setattr(toolschema, "_SHAPES", {})
    monkeypatch.setattr(toolschema, "_schema", counting)
    doc = ParsedDocstring("", {})
    for index in range(50):
        params = [Param(f"query_{index}", str), Param("limit", int, 10)]
        parameters_schema(f"tool_{index}", params, doc)
    parameters_schema("other", [Param("limit", int, 11)], doc)
    assert calls == ["tool_0", "other"]


def test_the_arguments_model_is_built_on_first_call(monkeypatch) -> None:
    built: list[str] = []
    real = toolschema._model

    def counting(function: str, *args: Any) -> Any:
        built.append(function)
        return real(function, *args)

    monkeypatch.setattr(toolschema, "_model", counting)

    def search(query: str, limit: int = 3) -> dict:
        """Search.

        Args:
            query: What to look for.
        """
        return {}

    monkeypatch.setattr(toolschema, "_SHAPES", {})
    schema = function_schema(search)
    assert schema.parameters["properties"]["query"]["description"] == "What to look for."
    built.clear()  # the shape's schema came from a model; the bound one is not built yet
    assert schema.bind({"query": "x", "limit": "4"}) == {"query": "x", "limit": 4}
    assert built == ["search"]
    with pytest.raises(Exception, match="search_arguments"):
        schema.bind({"limit": 1})
