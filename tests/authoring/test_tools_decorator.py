"""@tool: bare and with options; JSON schema from type hints and Google-style docstrings."""

from __future__ import annotations

import enum
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

from prefect_folpipe import ToolContext, tool
from prefect_folpipe.authoring._marker import describe_function, tool_meta
from prefect_folpipe.authoring._schema import ToolDefinitionError, function_schema, parse_docstring


class Point(BaseModel):
    x: int
    y: int = 0


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_bare_decorator_keeps_the_function_callable() -> None:
    @tool
    def double(n: int) -> int:
        """Double a number."""
        return n * 2

    assert double(4) == 8
    meta = tool_meta(double)
    assert meta is not None and meta.name == "double"
    schema, description = describe_function(double)
    assert description == "Double a number."
    assert schema.parameters == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    assert not schema.wants_context and not schema.is_async


def test_decorator_with_options() -> None:
    @tool(name="renamed", description="Explicit text", retries=3, timeout=1.5, scope="local")
    async def original(ctx: ToolContext, query: str) -> str:
        """Docstring text loses to the explicit description."""
        return query

    meta = tool_meta(original)
    assert meta is not None
    assert (meta.name, meta.retries, meta.timeout, meta.scope) == ("renamed", 3, 1.5, "local")
    assert meta.metadata() == {"retries": 3, "timeout": 1.5}
    schema, description = describe_function(original)
    assert description == "Explicit text"
    assert schema.wants_context and schema.is_async
    assert list(schema.parameters["properties"]) == ["query"]


@pytest.mark.parametrize("kwargs", [{"retries": -1}, {"timeout": 0}, {"scope": "global"}])
def test_decorator_rejects_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        tool(**kwargs)


def test_every_supported_type() -> None:
    def everything(
        text: str,
        count: int,
        ratio: float,
        flag: bool,
        names: list[str],
        table: dict[str, int],
        maybe: Optional[int] = None,  # noqa: UP045 - the typing form must work too
        either: str | None = None,
        mode: Literal["fast", "slow"] = "fast",
        colour: Colour = Colour.RED,
        point: Point | None = None,
        anything: Any = None,
        untyped=3,
    ) -> None:
        """Everything."""

    props = function_schema(everything).parameters["properties"]
    assert props["text"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number"}
    assert props["flag"] == {"type": "boolean"}
    assert props["names"] == {"type": "array", "items": {"type": "string"}}
    assert props["table"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert {"type": "integer"} in props["maybe"]["anyOf"]
    assert {"type": "null"} in props["either"]["anyOf"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["untyped"] == {"default": 3}
    schema = function_schema(everything).parameters
    assert schema["required"] == ["text", "count", "ratio", "flag", "names", "table"]
    assert "Point" in schema["$defs"] and "Colour" in schema["$defs"]
    assert "title" not in schema["$defs"]["Point"]


def test_bind_coerces_models_and_rejects_unknown_arguments() -> None:
    def move(point: Point, steps: int = 1) -> None: ...

    schema = function_schema(move)
    bound = schema.bind({"point": {"x": 2}})
    assert bound == {"point": Point(x=2, y=0), "steps": 1}
    with pytest.raises(ValueError):
        schema.bind({"point": {"x": 1}, "extra": True})


def test_kwargs_allow_extra_arguments() -> None:
    def loose(a: int, **rest: Any) -> None: ...

    schema = function_schema(loose)
    assert schema.parameters["additionalProperties"] is True
    assert schema.bind({"a": 1, "b": 2}) == {"a": 1, "b": 2}


def test_parameter_named_like_a_pydantic_attribute() -> None:
    def odd(schema: str, model_config: int = 0, json: bool = False) -> None: ...

    params = function_schema(odd).parameters
    assert list(params["properties"]) == ["schema", "model_config", "json"]
    assert function_schema(odd).bind({"schema": "s"}) == {
        "schema": "s",
        "model_config": 0,
        "json": False,
    }


def test_context_detected_by_annotation_under_another_name() -> None:
    def f(context: ToolContext, q: str) -> None: ...

    assert function_schema(f).wants_context
    assert list(function_schema(f).parameters["properties"]) == ["q"]


def test_unresolvable_context_hint_is_tolerated() -> None:
    def f(ctx: NotImported, q: str) -> None: ...  # type: ignore[name-defined] # noqa: F821

    assert list(function_schema(f).parameters["properties"]) == ["q"]


def test_unresolvable_hint_is_a_definition_error() -> None:
    def f(q: NotImported) -> None: ...  # type: ignore[name-defined] # noqa: F821

    with pytest.raises(ToolDefinitionError, match="NotImported"):
        function_schema(f)


def test_var_positional_is_a_definition_error() -> None:
    def f(*items: str) -> None: ...

    with pytest.raises(ToolDefinitionError, match="items"):
        function_schema(f)


def test_docstring_parser_google_and_rest() -> None:
    doc = parse_docstring(
        """Summary line.

        Longer text.

        Args:
            query (str): What to find,
                over two lines.
            *rest: Extra things.

        Returns:
            query: not a parameter.
        """
    )
    assert doc.summary == "Summary line.\n\nLonger text."
    assert doc.params == {"query": "What to find, over two lines.", "rest": "Extra things."}
    rest = parse_docstring("Do it.\n\n:param str q: the query\n:returns: x\n")
    assert rest.summary == "Do it."
    assert rest.params == {"q": "the query"}
    assert parse_docstring(None).summary == ""
