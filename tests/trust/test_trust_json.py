"""Issue 11 point 6 (and 18's replies delays): only strict JSON data enters a run.

NaN / Infinity in an answer, hostile nesting in an answer or a ``--context @file``, YAML dates,
``!!binary`` and ``!!set`` in a context or replies file: each is a coded error, never a Python
repr, a ``RecursionError`` or a hang.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefect_folpipe.agent.output import check_output
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.providers.scripted import RepliesFileError, load_replies
from prefect_folpipe.validate import validate_workflow

DEEP = 50_000


def fenced(body: str) -> str:
    return f"```json\n{body}\n```"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_an_answer_holding_nan_or_infinity_is_not_usable(literal: str) -> None:
    check = check_output(fenced(f'{{"score": {literal}}}'), {"score": None})
    assert not check.ok
    assert "score" not in check.outputs


def test_a_deeply_nested_answer_is_a_bad_answer_not_a_recursion_error() -> None:
    body = '{"a": ' + "[" * DEEP + "]" * DEEP + "}"
    check = check_output(fenced(body), {"a": None})
    assert not check.ok
    assert "nested" in check.errors[0]


def test_nesting_past_the_limit_is_refused_even_when_python_could_parse_it() -> None:
    body = '{"a": ' + "[" * 500 + "]" * 500 + "}"
    check = check_output(fenced(body), {"a": "list"})
    assert not check.ok


@pytest.mark.slow
def test_context_file_with_100000_nesting_levels_is_fp402(tmp_path: Path) -> None:
    from prefect_folpipe.cli.run import parse_context

    file = tmp_path / "ctx.json"
    file.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError) as caught:
        parse_context(f"@{file}")
    assert caught.value.code == "FP402"
    with pytest.raises(ConfigError) as inline:
        parse_context('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert inline.value.code == "FP402"


@pytest.mark.parametrize(
    "value", ["2024-01-01", "!!binary aGVsbG8=", "!!set {a, b}", ".nan", "-.inf"]
)
def test_yaml_only_values_in_a_context_file_are_fp402(tmp_path: Path, value: str) -> None:
    from prefect_folpipe.cli.run import parse_context

    file = tmp_path / "ctx.yaml"
    file.write_text(f"when: {value}\n")
    with pytest.raises(ConfigError) as caught:
        parse_context(f"@{file}")
    assert caught.value.code == "FP402"
    assert "when" in str(caught.value)


def test_nan_in_an_inline_context_is_fp402() -> None:
    from prefect_folpipe.cli.run import parse_context

    with pytest.raises(ConfigError) as caught:
        parse_context('{"x": NaN}')
    assert caught.value.code == "FP402"


@pytest.mark.parametrize("value", ["2024-01-01", "!!binary aGVsbG8=", "!!set {a, b}", ".inf"])
def test_yaml_only_values_in_a_replies_file_are_fp305(tmp_path: Path, value: str) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text(f"tasks:\n  t:\n    - output: {{when: {value}}}\n")
    with pytest.raises(RepliesFileError) as caught:
        load_replies(file)
    assert caught.value.code == "FP305"


@pytest.mark.slow
def test_a_deeply_nested_replies_file_is_fp305(tmp_path: Path) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text("default: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(RepliesFileError) as caught:
        load_replies(file)
    assert caught.value.code == "FP305"


@pytest.mark.parametrize("latency", [".inf", "1.0e+308", "1e308", "1e400", ".nan"])
def test_unbounded_reply_latency_is_refused(tmp_path: Path, latency: str) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text(f"latency_s: {latency}\ndefault: ok\n")
    with pytest.raises(RepliesFileError) as caught:
        load_replies(file)
    assert caught.value.code == "FP305"
    entry = tmp_path / "entry.yaml"
    entry.write_text(f"default: [{{text: ok, delay: {latency}}}]\n")
    with pytest.raises(RepliesFileError):
        load_replies(entry)


@pytest.mark.parametrize(("literal", "seconds"), [("1e3", 1000.0), ("5e-2", 0.05), ("2.5", 2.5)])
def test_json_exponent_numbers_are_numbers(tmp_path: Path, literal: str, seconds: float) -> None:
    """A JSON replies file's ``1e3`` is a number (YAML 1.1 alone reads it as a string), so a
    bounded delay written that way loads and ``1e308`` is refused for its size."""
    file = tmp_path / "replies.json"
    entry = f'{{"text": "ok", "delay": {literal}}}'
    file.write_text(f'{{"latency_s": {literal}, "default": [{entry}]}}')
    script = load_replies(file)
    assert script.latency_s == seconds and script.default[0].delay == seconds
    file.write_text('{"latency_s": 1e308, "default": "ok"}')
    with pytest.raises(RepliesFileError, match="from 0 to 3600, got 1e"):
        load_replies(file)


def test_a_date_in_task_yaml_context_is_a_validation_error(tmp_path: Path) -> None:
    from builders import write_files

    write_files(tmp_path, {"task.yaml": "context:\n  since: 2024-01-01\n", "instructions.md": "x"})
    codes = {(d.code, d.severity.value) for d in validate_workflow(tmp_path)}
    assert ("FP104", "error") in codes


@pytest.mark.prefect
def test_an_untyped_nan_output_fails_the_task_with_a_code_and_json_stays_strict(
    make_workflow, run
) -> None:
    wf = make_workflow(
        {
            "subtasks/score/instructions.md": "Score it.",
            "subtasks/score/task.yaml": {"output": ["score"], "settings": {"output_retries": 0}},
            "replies.yaml": {"tasks": {"score": ['```json\n{"score": NaN}\n```']}},
        }
    )
    result = run(wf)
    assert result.status == "failed"
    assert "FP312" in result.task("score")["error"]
    json.loads(result.to_json(), parse_constant=pytest.fail)  # strict: no NaN anywhere


@pytest.mark.prefect
def test_a_hook_putting_nan_in_the_context_is_fp515(make_workflow, run) -> None:
    wf = make_workflow(
        {
            "subtasks/calc/instructions.md": "Go.",
            "subtasks/calc/hooks/post_run.py": (
                "def run(ctx, task):\n    ctx.context['ratio'] = float('nan')\n"
            ),
        }
    )
    result = run(wf)
    assert result.status == "failed"
    assert "FP515" in result.task("calc")["error"]
    json.loads(result.to_json(), parse_constant=pytest.fail)
