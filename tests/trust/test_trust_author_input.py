"""Issue 31 point 6: author input never reaches an internal error (FP190).

A duplicate name in ``input:`` (with a comment anywhere in the file, which made the comment
reader crash) is FP106 at its line; a condition of any length or depth is FP134 (or the parse
error it is) naming task.yaml and the line, found before anything parses or walks it
recursively.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from builders import write_workflow

from prefect_folpipe.expressions import ExpressionError, compile_condition
from prefect_folpipe.validate import validate_workflow


def _codes(root: Path) -> list[tuple[str, str | None, int | None]]:
    return [(d.code, d.file, d.line) for d in validate_workflow(root)]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("input: {optional: [a, a]  # c\n  }\n", 1, "twice in input.optional"),
        ("input: {optional: [a, a]}  # c\n", 1, "twice in input.optional"),
        ("input: {optional: [a, a]}\n", 1, "twice in input.optional"),
        ("input:\n  required: [a]\n  optional:\n    - b  # the b\n    - a  # again\n", 5, "both"),
        ("input:\n  required: {a: str}  # c\n  optional: {a: int}\n", 3, "both"),
    ],
)
def test_a_duplicate_input_name_is_fp106_at_its_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    root = tmp_path / "wf"
    root.mkdir()
    (root / "instructions.md").write_text("x")
    (root / "task.yaml").write_text(text)
    diagnostics = validate_workflow(root)
    assert [(d.code, d.file, d.line) for d in diagnostics] == [("FP106", "task.yaml", line)]
    assert "'a'" in diagnostics[0].message
    assert message.replace("both", "required and optional") in diagnostics[0].message


def test_comments_still_describe_inputs(tmp_path: Path) -> None:
    from prefect_folpipe.validate import load_workflow

    root = write_workflow(tmp_path / "wf", {"instructions.md": "x"})
    (root / "task.yaml").write_text("input:\n  required:\n    - topic  # what it is about\n")
    spec = load_workflow(root).root.config.input
    assert spec is not None and spec.field("topic").description == "what it is about"


HUGE = 100_000
CONDITIONS: dict[str, Any] = {
    "100,000 or-terms": " or ".join(["context.x == 1"] * HUGE),
    "100,000 and-terms": " and ".join(["context.x"] * HUGE),
    "100,000 nots": "not " * HUGE + "context.x",
    "100,000 minuses": "-" * HUGE + "1",
    "100,000 parentheses": "(" * HUGE + "1" + ")" * HUGE,
    "within the length: 2,400 nots": "not " * 2_400 + "context.x",
    "within the length: 4,000 minuses": "-" * 4_000 + "1",
    "within the length: 4,900 parentheses": "(" * 4_900 + "1" + ")" * 4_900,
    "within the length: a power tower": "2**" * 3_000 + "2",
    "within the length: 4,000 additions": "1+" * 4_000 + "1",
    "within the length: chained ternaries": "1 if context.a else " * 450 + "0",
    "within the length: an attribute chain": "context" + ".a" * 4_000,
    "within the length: a subscript chain": "context" + "['a']" * 1_900,
    "within the length: nested lists": "[" * 3_000 + "]" * 3_000,
    "a structured not-chain": {"not": None},
    "a structured all of 100,000": {"all": [{"key": "x", "equals": 1}] * HUGE},
}


def _structured_nots(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"key": "x", "equals": 1}
    for _ in range(depth):
        spec = {"not": spec}
    return spec


CONDITIONS["a structured not-chain"] = _structured_nots(5_000)


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_any_condition_is_a_coded_expression_error_fast(name: str) -> None:
    started = time.monotonic()
    with pytest.raises(ExpressionError) as caught:
        compile_condition(CONDITIONS[name])
    assert caught.value.code in ("FP130", "FP134"), caught.value
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "name", ["100,000 or-terms", "100,000 nots", "within the length: 2,400 nots"]
)
@pytest.mark.parametrize("key", ["skip_if", "until"])
def test_validate_names_task_yaml_and_the_line(tmp_path: Path, name: str, key: str) -> None:
    config: dict[str, Any] = {"description": "x"}
    if key == "skip_if":
        config["conditions"] = {"skip_if": CONDITIONS[name]}
    else:
        config["subtasks"] = {
            "execution_type": "loop",
            "max_iterations": 2,
            "until": CONDITIONS[name],
        }
    files: dict[str, Any] = {"subtasks/a/instructions.md": "x"}
    if key == "until":
        files["subtasks/a/subtasks/b/instructions.md"] = "y"
    root = write_workflow(tmp_path / "wf", files)
    (root / "subtasks/a/task.yaml").write_text(json.dumps(config, indent=2))  # JSON is YAML
    found = validate_workflow(root)
    assert [(d.code, d.file) for d in found] == [("FP134", "subtasks/a/task.yaml")], found
    assert found[0].line is not None and found[0].line > 1


def test_ordinary_conditions_still_compile() -> None:
    for expr in (
        "context.review.approved == true",
        "not any(e['task'] == 'fetch' for e in context.get('_errors', []))",
        "-(-1) <= context.x and not not context.y",
        " or ".join(f"context.k{i} == {i}" for i in range(300)) + " or context.x == 1",
        "(" * 30 + "context.x" + ")" * 30,
    ):
        assert compile_condition(expr).evaluate({"x": 1, "y": 1, "review": {"approved": True}})
    assert compile_condition(_structured_nots(20)).evaluate({"x": 1})
