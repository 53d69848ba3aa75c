"""Issue 11 point 15: conditions are bounded in CPU, not only in operand size.

Constants that would take minutes are rejected by ``validate`` (FP133); values read from the
context hit the same bounds at run time (FP132); an evaluation has a step budget and a
deadline (``timeout=``), so a task's time limit can bound it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import write_workflow

from prefect_folpipe.expressions import ExpressionError, compile_condition
from prefect_folpipe.validate import validate_workflow

SLOW_CONSTANTS = [
    "4000000 ** 4000000 > 0",
    "sum([[0]*50000]*400, []) == []",
    "1 << 100000000 > 0",
    "(10 ** 4000) * (10 ** 4000) > 0",
    "len('x' * 99999 * 99999) > 0",
]


@pytest.mark.parametrize("expr", SLOW_CONSTANTS)
def test_validate_rejects_constants_past_the_bounds(tmp_path: Path, expr: str) -> None:
    write_workflow(
        tmp_path,
        {
            "subtasks/a/instructions.md": "x",
            "subtasks/a/task.yaml": {"conditions": {"skip_if": expr}},
            "subtasks/loop/task.yaml": {
                "subtasks": {"execution_type": "loop", "max_iterations": 2, "until": expr}
            },
            "subtasks/loop/subtasks/step/instructions.md": "x",
        },
    )
    found = [d for d in validate_workflow(tmp_path) if d.code == "FP133"]
    assert {d.task for d in found} == {"a", "loop"}
    assert all(d.severity.value == "error" for d in found)


@pytest.mark.parametrize(
    "expr",
    [
        "2 ** context.n > 0",  # within simpleeval's operand cap, a 4-million-bit result
        "(3 ** 9000) * context.n * (3 ** 9000) > 0",
        "len(sum([[0] * 1000] * context.n, [])) > 0",
        "context.n * [0] == []",
    ],
)
def test_context_values_hit_the_same_bounds_at_run_time(expr: str) -> None:
    condition = compile_condition(expr)
    with pytest.raises(ExpressionError) as caught:
        condition.evaluate({"n": 4_000_000})
    assert caught.value.code == "FP132"


def test_an_evaluation_stops_at_its_deadline() -> None:
    condition = compile_condition("any(x < 0 for x in context.items for y in context.items)")
    context = {"items": list(range(3000))}
    with pytest.raises(ExpressionError) as caught:
        condition.evaluate(context, timeout=0)
    assert caught.value.code == "FP132"
    assert "longer than" in str(caught.value)


def test_small_arithmetic_still_works() -> None:
    assert compile_condition("2 ** 10 == 1024 and sum([1, 2]) == 3").evaluate({})
    assert compile_condition("sum(context.l, []) == [1, 2]").evaluate({"l": [[1], [2]]})
    assert compile_condition("context.n * 'ab' == 'abab'").evaluate({"n": 2})


@pytest.mark.prefect
def test_a_skip_if_past_the_bounds_fails_the_task_with_a_code(
    tmp_path: Path, prefect_harness: str
) -> None:
    from prefect_folpipe.compile import run_workflow

    wf = write_workflow(
        tmp_path / "wf",
        {
            "task.yaml": {"context": {"n": 4_000_000}},
            "subtasks/a/instructions.md": "x",
            "subtasks/a/task.yaml": {"conditions": {"skip_if": "2 ** context.n > 0"}},
        },
    )
    result = run_workflow(wf)
    assert result.task("a")["status"] == "failed"
    assert "FP132" in result.task("a")["error"]
