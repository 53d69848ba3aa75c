"""Conditions as folpipe 0.1.8 wrote them (point 7): ``exists`` tests presence, and the
``{type: python, expr}`` form runs through the safe evaluator."""

from __future__ import annotations

import pytest

from prefect_folpipe import validate_workflow
from prefect_folpipe.expressions import ExpressionError, compile_condition


@pytest.mark.parametrize(
    ("condition", "context", "expected"),
    [
        ({"key": "x", "exists": True}, {"x": None}, True),
        ({"key": "x", "exists": True}, {}, False),
        ({"key": "x", "exists": False}, {}, True),
        ({"key": "x", "exists": False}, {"x": None}, False),
        ({"key": "x", "not_exists": True}, {"x": None}, False),
        ({"key": "x", "not_exists": True}, {}, True),
        ({"key": "a.b", "exists": True}, {"a": {"b": None}}, True),
        ({"key": "a.b", "exists": True}, {"a": {"c": 1}}, False),
        ({"key": "a.b", "exists": True}, {"a": None}, False),
        ({"key": "l.1", "exists": True}, {"l": [0, None]}, True),
        ({"key": "l.5", "exists": True}, {"l": [0, None]}, False),
        ({"type": "python", "expr": "context.get('done') is True"}, {"done": True}, True),
        ({"type": "python", "expr": "context.get('done') is True"}, {}, False),
        ({"expr": "len(context['items']) > 1"}, {"items": [1, 2]}, True),
    ],
)
def test_structured_and_python_conditions(condition, context, expected):
    assert compile_condition(condition).evaluate(context) is expected


@pytest.mark.parametrize(
    ("condition", "code"),
    [
        ({"type": "python", "expr": "context.__class__"}, "FP131"),
        ({"type": "python", "expr": "__import__('os')"}, "FP131"),
        ({"type": "python", "expr": "1 +"}, "FP130"),
        ({"type": "python"}, "FP130"),
        ({"type": "shell", "expr": "true"}, "FP130"),
        ({"type": "python", "expr": "True", "key": "x"}, "FP130"),
    ],
)
def test_unsafe_or_malformed_python_conditions_are_rejected(condition, code):
    with pytest.raises(ExpressionError) as info:
        compile_condition(condition)
    assert info.value.code == code


def test_skip_if_on_a_null_key_and_a_python_until_run(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {
                "context": {"flag": None},
                "subtasks": {"execution_type": "sequential"},
            },
            "subtasks/10_skipped/task.yaml": {
                "conditions": {"skip_if": {"key": "flag", "exists": True}}
            },
            "subtasks/10_skipped/instructions.md": "never",
            "subtasks/20_loop/task.yaml": {
                "subtasks": {
                    "execution_type": "loop",
                    "max_iterations": 5,
                    "until": {"type": "python", "expr": "context.get('done') is True"},
                }
            },
            "subtasks/20_loop/subtasks/step/task.yaml": {"output": {"done": "bool"}},
            "subtasks/20_loop/subtasks/step/instructions.md": "step",
            "replies.yaml": {
                "tasks": {"step": [{"output": {"done": False}}, {"output": {"done": True}}]}
            },
        }
    )
    assert [d.code for d in validate_workflow(path) if d.severity.value == "error"] == []
    result = run(path)
    assert result.status == "completed"
    assert result.task("skipped")["status"] == "skipped"
    assert result.task("loop/step")["model_calls"] == 2
    assert result.context["done"] is True


def test_validate_reports_an_unsafe_python_condition(make_workflow):
    path = make_workflow(
        {
            "task.yaml": {"conditions": {"skip_if": {"type": "python", "expr": "().__class__"}}},
            "instructions.md": "x",
        }
    )
    found = [d for d in validate_workflow(path) if d.code == "FP131"]
    assert found and found[0].file == "task.yaml"
