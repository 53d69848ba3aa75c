"""Safe conditions: what evaluates, what is rejected at compile time, the structured form."""

from __future__ import annotations

import pytest

from prefect_folpipe.expressions import ExpressionError, compile_condition

CONTEXT = {
    "review_cv": {"approved": True, "feedback": "ok", "scores": [1, 2, 3]},
    "_errors": [{"task": "fetch_data", "error": "boom", "iteration": None}],
    "count": 3,
    "title": "Hello World",
    "tags": ["a", "b"],
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("context.review_cv.approved == true", True),
        ("context['review_cv']['approved'] is True", True),
        ("context.review_cv.feedback != null", True),
        ("context.missing is None", True),
        ("context.missing.deeper.still is None", True),
        ("context['missing']['x'] == null", True),
        ("context.review_cv.scores[5] is None", True),
        ("not any(e['task'] == 'fetch_data' for e in context.get('_errors', []))", False),
        ("any(e['task'] == 'other' for e in context.get('_errors', []))", False),
        ("all(s > 0 for s in context.review_cv.scores)", True),
        ("len(context._errors) == 1", True),
        ("context.get('nothing', 7) == 7", True),
        ("'a' in context.tags and 'z' not in context.tags", True),
        ("context.title.lower().startswith('hello')", True),
        ("sum([x * 2 for x in context.review_cv.scores]) == 12", True),
        ("context.count >= 3 if context.review_cv.approved else false", True),
        ("{k: v for k, v in context.review_cv.items()}['feedback'] == 'ok'", True),
        ("'approved' in context.review_cv.keys()", True),
        ("max(context.review_cv.scores) == 3 and min(1, 2) == 1", True),
    ],
)
def test_expressions_evaluate(expr: str, expected: bool) -> None:
    assert compile_condition(expr).evaluate(CONTEXT) is expected


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os').system('true')",
        "context.__class__",
        "context.review_cv.__class__.__mro__",
        "().__class__.__bases__[0].__subclasses__()",
        "import os",
        "from os import path",
        "x = 1",
        "open('/etc/passwd')",
        "eval('1')",
        "getattr(context, 'x')",
        "lambda: 1",
        "(lambda x: x)(1)",
        "context.title.format(1)",
        "contxt.approved",
        "f'{context.title:>999999999}'",
        "(x := 1)",
        "context.get('a')('b')",
    ],
)
def test_unsafe_expressions_are_rejected_at_compile_time(expr: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_condition(expr)
    assert info.value.code == "FP131"
    assert info.value.hint


@pytest.mark.parametrize("expr", ["1 +", "context.a ==", "", "   ", "(((", "a b c"])
def test_unparsable_expressions(expr: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_condition(expr)
    assert info.value.code == "FP130"


def test_did_you_mean_for_misspelled_context() -> None:
    with pytest.raises(ExpressionError, match="did you mean 'context'"):
        compile_condition("contxt.approved == true")


@pytest.mark.parametrize(
    "expr",
    [
        "context.count ** 9 ** 9 > 0",
        "'a' * context.count * 10 ** 8",
        "[1] * (context.count * 10 ** 8)",
        "context.count > 'x'",
    ],
)
def test_evaluation_is_bounded_and_failures_are_expression_errors(expr: str) -> None:
    condition = compile_condition(expr)
    with pytest.raises(ExpressionError) as info:
        condition.evaluate(CONTEXT)
    assert info.value.code == "FP132"


@pytest.mark.parametrize("expr", ["9 ** 9 ** 9 ** 9", "'a' * 10 ** 9", "[1] * 10 ** 8"])
def test_constants_past_the_bounds_are_rejected_when_compiled(expr: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_condition(expr)
    assert info.value.code == "FP133"


def test_huge_comprehension_is_refused() -> None:
    context = {"items": list(range(20_000))}
    condition = compile_condition("len([x for x in context['items']]) > 0")
    with pytest.raises(ExpressionError):
        condition.evaluate(context)


def test_evaluation_does_not_mutate_the_context() -> None:
    context = {"a": {"b": [1]}}
    compile_condition("context.a.b[0] == 1 and context.get('z') is None").evaluate(context)
    assert context == {"a": {"b": [1]}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"key": "review_cv.approved", "equals": True}, True),
        ({"key": "context.review_cv.approved", "equals": False}, False),
        ({"key": "review_cv.feedback", "not_equals": "bad"}, True),
        ({"key": "tags", "contains": "a"}, True),
        ({"key": "title", "contains": "World"}, True),
        ({"key": "missing", "contains": "x"}, False),
        ({"key": "count", "greater_than": 2}, True),
        ({"key": "count", "less_than": 2}, False),
        ({"key": "missing", "greater_than": 2}, False),
        ({"key": "review_cv.approved", "exists": True}, True),
        ({"key": "missing.deep", "exists": True}, False),
        ({"key": "missing.deep", "not_exists": True}, True),
        ({"key": "review_cv.scores.0", "equals": 1}, True),
        ({"all": [{"key": "count", "equals": 3}, {"key": "tags", "contains": "b"}]}, True),
        ({"all": [{"key": "count", "equals": 3}, {"key": "tags", "contains": "z"}]}, False),
        ({"any": [{"key": "count", "equals": 4}, "context.count == 3"]}, True),
        ({"not": {"key": "count", "equals": 3}}, False),
    ],
)
def test_structured_conditions(spec: dict, expected: bool) -> None:
    assert compile_condition(spec).evaluate(CONTEXT) is expected


@pytest.mark.parametrize(
    "spec",
    [
        {"key": "a", "equal": 1},
        {"equals": 1},
        {"key": "a"},
        {"key": "a", "equals": 1, "contains": 2},
        {"all": []},
        {"all": {"key": "a", "equals": 1}},
        {"all": [{"key": "a", "equals": 1}], "key": "b"},
        {"key": "a.__class__", "exists": True},
        {"any": ["__import__('os')"]},
    ],
)
def test_malformed_structured_conditions(spec: dict) -> None:
    with pytest.raises(ExpressionError):
        compile_condition(spec)


def test_unknown_structured_key_suggests_the_operator() -> None:
    with pytest.raises(ExpressionError) as info:
        compile_condition({"key": "a", "greater": 1})
    assert "greater_than" in (info.value.hint or "")


def test_non_string_non_mapping_is_rejected() -> None:
    with pytest.raises(ExpressionError):
        compile_condition(42)  # type: ignore[arg-type]


def test_expression_error_pickles() -> None:
    import pickle

    err = ExpressionError("bad", code="FP131", hint="h")
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.hint, str(again)) == ("FP131", "h", "bad")


def test_methods_win_over_same_named_context_keys() -> None:
    context = {"get": "a value", "keys": [1], "data": {"get": 1}}
    assert compile_condition("context.get('get') == 'a value'").evaluate(context)
    assert compile_condition("context.keys == [1]").evaluate(context)
    assert compile_condition("context.data.get('get') == 1").evaluate(context)
    assert compile_condition("context.missing.get('x') is None").evaluate(context)
