"""Approval gates without a run: the prompt template (no code runs), the typed form, durations,
the validation rules (FP166-FP169), ``--approve`` and the terminal approver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest

from prefect_folpipe.cli._approve import TerminalApprover, parse_approvals
from prefect_folpipe.compile.approvals._question import Question
from prefect_folpipe.errors import ConfigError, Severity
from prefect_folpipe.validate import validate_workflow
from prefect_folpipe.workflow.approval import (
    coerce,
    input_fields,
    mentions,
    parse_duration,
    render_prompt,
    template_problems,
)
from prefect_folpipe.workflow.config import task_yaml_json_schema

CONTEXT = {"version": "1.2", "build": {"id": 42, "tags": ["a", "b"]}, "odd key": "x"}


@pytest.mark.parametrize(
    ("template", "rendered"),
    [
        ("Ship {{ context.version }}?", "Ship 1.2?"),
        ("{{context.build.id}} / {{ context.build.tags[1] }}", "42 / b"),
        ("{{ context['odd key'] }}", "x"),
        ("missing: [{{ context.nope.deeper }}]", "missing: []"),
        ("{{ context.build }}", '{"id": 42, "tags": ["a", "b"]}'),
        ("{{ context.build.tags[9] }}|{{ context.version[0] }}", "|"),
    ],
)
def test_the_prompt_substitutes_context_values(template: str, rendered: str) -> None:
    assert render_prompt(template, CONTEXT) == rendered
    assert template_problems(template) == []


@pytest.mark.parametrize(
    "template",
    [
        "{{ context.version.__class__ }}x{{ ''.__class__ }}",
        "{{ context.version | upper }}",
        "{% for x in context %}{{ x }}{% endfor %}",
        "{{ config.items() }}",
        "{{ context.version",
        "{{ lipsum.__globals__ }}",
    ],
)
def test_anything_but_a_context_path_is_rejected_and_never_evaluated(template: str) -> None:
    assert template_problems(template)
    rendered = render_prompt(template, CONTEXT)
    assert "class" not in rendered.replace("__class__", "") and "function" not in rendered


def test_the_form_is_typed_and_answers_are_coerced() -> None:
    fields = input_fields({"approved": "bool", "n": "int", "why": "str", "pick": ["a", "b"]})
    assert fields["pick"] == ("a", "b")
    answer = coerce(fields, {"approved": "yes", "n": "3", "why": "ok", "pick": "b"})
    assert answer == {"approved": True, "n": 3, "why": "ok", "pick": "b"}
    for bad, reason in [
        ({"approved": "maybe", "n": 1, "why": "", "pick": "a"}, "yes or no"),
        ({"approved": True, "n": "x", "why": "", "pick": "a"}, "must be int"),
        ({"approved": True, "n": 1, "why": "", "pick": "c"}, "one of a, b"),
        ({"approved": True, "n": True, "why": "", "pick": "a"}, "must be int"),
        ({"approved": True, "why": "", "pick": "a"}, "no value for 'n'"),
        ({"approved": True, "n": 1, "why": "", "pick": "a", "extra": 1}, "unknown key"),
    ]:
        with pytest.raises(ValueError, match=reason):
            coerce(fields, bad)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("72h", 259200.0),
        ("30m", 1800.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
        (45, 45.0),
        (None, None),
    ],
)
def test_durations(value: Any, seconds: float | None) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["soon", "3 weeks", "-5", 0, "h", True])
def test_bad_durations(value: Any) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


def test_skip_if_that_reads_the_answer_waits_for_it() -> None:
    assert mentions("not context.approved", {"approved": "bool"})
    assert not mentions("context.dry_run", {"approved": "bool"})
    assert mentions({"key": "approved", "equals": True}, {"approved": "bool"})


def _workflow(tmp_path: Path, ship: str, extra: dict[str, str] | None = None) -> Path:
    files = {
        "task.yaml": "name: r\nproviders: {default: scripted, scripted: {replies: r.yaml}}\n",
        "r.yaml": "default: ok\n",
        "subtasks/ship/instructions.md": "Ship.",
        "subtasks/ship/task.yaml": ship,
        **(extra or {}),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("ship", "code", "line"),
    [
        ("approval:\n  prompt: ok\n  input: {_env: str}\n", "FP166", 3),
        ("approval:\n  prompt: ok\n  input: {}\n", "FP166", 3),
        ("approval:\n  prompt: 'Ship {{ context.v.__class__ }}'\n", "FP167", 2),
        ("approval:\n  prompt: '{% if x %}ship{% endif %}'\n", "FP167", 2),
        ("approval:\n  prompt: ok\n  timeout: next week\n", "FP168", 3),
        ("approval:\n  prompt: ok\n  input: {approved: boolean}\n", "FP104", 3),
    ],
)
def test_validate_reports_gate_mistakes_with_file_and_line(
    tmp_path: Path, ship: str, code: str, line: int
) -> None:
    diagnostics = validate_workflow(_workflow(tmp_path, ship))
    found = [d for d in diagnostics if d.code == code]
    assert found, diagnostics
    assert found[0].file.endswith("ship/task.yaml") and found[0].line == line
    assert found[0].task == "ship" and found[0].hint


def test_checkpoints_off_beside_a_gate_is_a_warning(tmp_path: Path) -> None:
    extra = {
        "subtasks/fetch/instructions.md": "Fetch.",
        "subtasks/fetch/task.yaml": "settings: {cache: false}\n",
    }
    diagnostics = validate_workflow(_workflow(tmp_path, "approval: {prompt: ok}\n", extra))
    assert [(d.code, d.severity, d.task) for d in diagnostics] == [
        ("FP169", Severity.WARNING, "fetch")
    ]


def test_a_valid_gate_has_no_diagnostics_and_is_in_the_schema(tmp_path: Path) -> None:
    gate = "approval:\n  prompt: 'Ship {{ context.v }}?'\n  input: {ok: bool, pick: [a, b]}\n"
    assert validate_workflow(_workflow(tmp_path, gate + "  timeout: 72h\n")) == []
    schema = task_yaml_json_schema()
    approval = schema["$defs"]["ApprovalConfig"]
    assert set(approval["properties"]) == {"prompt", "input", "timeout", "on_timeout", "notify"}


def test_approve_options() -> None:
    assert parse_approvals(["approved=yes", "ship:comment=a=b:c", "a/b:x="]) == {
        "": {"approved": "yes"},
        "ship": {"comment": "a=b:c"},
        "a/b": {"x": ""},
    }
    for bad in ["approved", "=yes", "ship:=1"]:
        with pytest.raises(ConfigError) as raised:
            parse_approvals([bad])
        assert raised.value.code == "FP402"


def test_the_terminal_asks_each_key_until_the_answer_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    typed = iter(["perhaps", "yes", "looks fine"])
    prompts: list[str] = []

    def prompt(text: str, **kwargs: Any) -> str:
        assert kwargs.get("err") is True  # never on stdout (--json stays one document)
        prompts.append(text)
        return next(typed)

    monkeypatch.setattr(click, "prompt", prompt)
    paused: list[str] = []

    class Pause:
        def __enter__(self) -> None:
            paused.append("in")

        def __exit__(self, *exc: object) -> None:
            paused.append("out")

    console = Console(record=True, width=100)
    approver = TerminalApprover(console, Pause)
    question = Question("ship", "ship", "Ship 1.2?", {"approved": "bool", "note": "str"}, None)
    assert approver(question) == {"approved": True, "note": "looks fine"}
    assert prompts == ["approved (yes/no)", "approved (yes/no)", "note (str)"]
    assert paused == ["in", "out"]
    text = console.export_text()
    assert "Ship 1.2?" in text and "yes or no" in text
