"""Structured output: JSON extraction, declared keys, type coercion, schema, repair prompt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefect_folpipe.agent.output import (
    CoercionError,
    check_output,
    coerce,
    extract_json,
    output_schema,
    repair_prompt,
)


def test_json_fence_is_preferred_and_the_last_block_wins() -> None:
    text = (
        'draft:\n```json\n{"a": 1}\n```\nbare:\n```\n{"a": 2}\n```\n'
        'final:\n```json\n{"a": 3}\n```\n'
    )
    assert extract_json(text) == {"a": 3}


def test_bare_fence_then_whole_text() -> None:
    assert extract_json('here:\n```\n{"b": true}\n```') == {"b": True}
    assert extract_json('  {"c": null} ') == {"c": None}


def test_other_language_fences_are_ignored() -> None:
    with pytest.raises(ValueError, match="no ```json code block"):
        extract_json("```python\nprint(1)\n```")


def test_broken_json_is_reported() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        extract_json('```json\n{"a": \n```')


def test_check_reports_every_problem_at_once() -> None:
    text = '```json\n{"count": "many", "ok": "yes"}\n```'
    check = check_output(text, {"count": "int", "ok": "bool", "feedback": "str"})
    assert not check.ok
    assert check.errors == (
        "key 'count': expected int, got str \"many\"",
        "missing key 'feedback'",
    )


def test_check_coerces_and_passes_untyped_keys_through() -> None:
    text = '```json\n{"n": "3", "x": "2.5", "ok": "true", "tags": "[1, 2]", "raw": {"k": 1}}\n```'
    check = check_output(
        text, {"n": "int", "x": "float", "ok": "bool", "tags": "list", "raw": None}
    )
    assert check.ok
    assert check.outputs == {"n": 3, "x": 2.5, "ok": True, "tags": [1, 2], "raw": {"k": 1}}


def test_non_object_json_is_an_error() -> None:
    assert check_output("```json\n[1]\n```", {"a": None}).errors == (
        "the JSON must be an object, got list",
    )


@pytest.mark.parametrize(
    ("value", "type_name", "expected"),
    [
        ("3", "int", 3),
        (3.0, "int", 3),
        ("4.0", "int", 4),
        (7, "float", 7.0),
        ("1e3", "float", 1000.0),
        ("TRUE", "bool", True),
        ("no", "bool", False),
        (0, "bool", False),
        (12, "str", "12"),
        ('{"a": 1}', "dict", {"a": 1}),
        ([1], "list", [1]),
    ],
)
def test_sensible_coercions(value, type_name, expected) -> None:
    result = coerce(value, type_name)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (True, "int"),
        (3.5, "int"),
        ("three", "int"),
        (False, "float"),
        ("nan", "float"),
        ("maybe", "bool"),
        (2, "bool"),
        (None, "str"),
        ([1], "str"),
        ("[1]", "dict"),
        ({"a": 1}, "list"),
    ],
)
def test_rejected_coercions(value, type_name) -> None:
    with pytest.raises(CoercionError):
        coerce(value, type_name)


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_int_coercion_round_trips_strings(number: int) -> None:
    assert coerce(str(number), "int") == number


def test_output_schema_for_json_mode() -> None:
    assert output_schema({}) is None
    assert output_schema({"approved": "bool", "raw": None}) == {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "raw": {}},
        "required": ["approved", "raw"],
    }


def test_repair_prompt_names_errors_and_keys() -> None:
    text = repair_prompt(("missing key 'a'",), {"a": "int", "b": None})
    assert "missing key 'a'" in text and "- a (int)" in text and "- b (any)" in text


def test_fences_open_at_the_start_of_a_line_only() -> None:
    text = 'Answer with a ```json code block, like:\n```json\n{"a": 1}\n```'
    assert extract_json(text) == {"a": 1}
    assert extract_json('  ```json\n{"b": 2}\n  ```') == {"b": 2}
