"""Issue 11: a bounded property-based fuzz over task.yaml, tools.md, replies and model outputs;
issue 31: conditions of any length and depth, and ``input:`` lists with repeated names and
comments.

Whatever the input, the outcome is a coded diagnostic or error (``FPxxx``) or a clean result —
never an uncaught exception (FP190 included), a hang or an exit. A fixed seed (the same cases
on every run, in the suite) and about 900 cases in all; no Prefect (the agent runs a task
directly, with the scripted provider).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import make_task, scripted_provider, workflow_around
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefect_folpipe.agent.output import check_output
from prefect_folpipe.agent.task import run_task
from prefect_folpipe.errors import Diagnostic, FolpipeError
from prefect_folpipe.expressions import ExpressionError, compile_condition
from prefect_folpipe.providers.scripted import ScriptedProvider, load_replies
from prefect_folpipe.validate import validate_workflow
from prefect_folpipe.workflow.jsondata import dumps as strict_dumps

pytestmark = pytest.mark.slow  # property runs, seconds each

CODE = re.compile(r"^FP\d{3}$")
FUZZ = settings(
    max_examples=100,
    derandomize=True,  # a fixed seed: the suite runs the same cases every time
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# -- building blocks --------------------------------------------------------------------------

SCALARS = st.sampled_from(
    [
        "x", "", "2024-01-01", "!!binary aGk=", "!!set {a}", ".nan", ".inf", "1e309", "-1",
        "0", "3.5", "true", "null", "~", "'quoted'", "[1, [2, [3]]]", "{a: 1}", "*alias",
        "&anchor v", "!!python/object:os.system x", "\"\\u0000\"", "[" * 60 + "]" * 60,
    ]
)  # fmt: skip
KEYS = st.sampled_from(
    [
        "name", "priority", "enabled", "output", "input", "context", "settings", "subtasks",
        "conditions", "depends_on", "on_failure", "default_output", "providers", "agent",
        "tools", "security", "prioirty", "", "settings.timeout", "max_iterations",
    ]
)  # fmt: skip


@st.composite
def yaml_texts(draw: st.DrawFn) -> str:
    """task.yaml-like text: valid structure, wrong types, YAML tags, garbage lines."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(KEYS)
        if draw(st.booleans()):
            lines.append(f"{key}: {draw(SCALARS)}")
        else:
            lines.append(f"{key}:")
            for _ in range(draw(st.integers(1, 3))):
                lines.append(f"  {draw(KEYS) or 'k'}: {draw(SCALARS)}")
    if draw(st.booleans()):
        lines.append(draw(st.text(max_size=30)))
    return "\n".join(lines) + "\n"


PYTHON = st.sampled_from(
    [
        "def t(x: int, y: 'list[str]' = []) -> str:\n    return ''\n",
        "def t(x: int) -> int:\n    return x +\n",
        "raise SystemExit(0)\n",
        "import os\nos._exit(0)\n",
        "import definitely_missing_xyz\n",
        "from . import nothing\n",
        "def t(*args): pass\n",
        "def t(ctx, a: Literal['x', 'y'] = 'x', b: dict[str, int] | None = None): ...\n",
        "@tool(name=compute())\ndef t(): ...\n",
        "@tool(retries=-1)\ndef t(): ...\n",
        "x = 1\n",
        "def a(): ...\ndef b(): ...\n",
        "def t(q: Undefined = object()) -> None: ...\n",
    ]
)
META = st.sampled_from(
    [
        "> type: python", "> type: shell", "> type: http", "> type: mcp", "> type: nope",
        "> url: https://example.com/{x}", "> server: s", "> params: git_ssh_command (str)",
        "> params: a (str, default=1), b (frob)", "> timeout: -3", "> retries: x",
        "> env: [A_TOKEN]", "> scope: local", "> function: other", "> broken line",
    ]
)  # fmt: skip


@st.composite
def tools_md_texts(draw: st.DrawFn) -> str:
    sections = []
    for index in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["t", "fetch", "bad name", "", "t"]))
        parts = [f"## {name or ''}"]
        parts += draw(st.lists(META, max_size=3))
        parts.append("\nA tool.\n")
        fence = draw(st.sampled_from(["```python", "```bash", "```", "~~~"]))
        if draw(st.booleans()):
            body = (
                draw(PYTHON) if "python" in fence or fence == "```" else "echo $QUERY $LD_PRELOAD\n"
            )
            closing = "" if draw(st.integers(0, 9)) == 0 else fence[:3]
            parts.append(f"{fence}\n{body}{closing}")
        sections.append("\n".join(parts))
        del index
    return "\n\n".join(sections) + "\n"


ENTRY = st.one_of(
    st.text(max_size=40),
    st.fixed_dictionaries({"output": st.dictionaries(st.sampled_from(["a", "b"]), SCALARS)}),
    st.fixed_dictionaries({"error": st.sampled_from(["rate_limit", "auth", "nope", 3])}),
    st.fixed_dictionaries(
        {"tool_calls": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["t", 1])}))}
    ),
    st.fixed_dictionaries({"echo": st.booleans(), "delay": st.sampled_from([0, -1, 1e308])}),
    st.sampled_from([None, 3, [], {"unknown": 1}]),
)


@st.composite
def replies_texts(draw: st.DrawFn) -> str:
    data: dict[str, Any] = {}
    if draw(st.booleans()):
        data["tasks"] = {draw(st.sampled_from(["t", "x"])): draw(st.lists(ENTRY, max_size=3))}
    if draw(st.booleans()):
        data["default"] = draw(ENTRY)
    if draw(st.booleans()):
        data["latency_s"] = draw(st.sampled_from([0, 0.0, -1, "fast", float("inf")]))
    text = yaml.safe_dump(data, allow_unicode=True)
    if draw(st.booleans()):
        text += f"extra: {draw(SCALARS)}\n"
    return text


ANSWERS = st.one_of(
    st.text(max_size=80),
    st.builds(
        lambda body: f"```json\n{body}\n```",
        st.sampled_from(
            [
                '{"a": NaN}', '{"a": 1e999}', '{"a": "x", "b": [1, 2]}', "[1, 2]",
                '{"a": ' + "[" * 3000 + "]" * 3000 + "}", '{"a": {"b": Infinity}}', "{oops",
                '{"a": "' + "z" * 500 + '"}', '{"a": true, "b": {"c": null}}',
            ]
        ),
    ),
)  # fmt: skip


PIECES = st.sampled_from(
    [
        "not ", "-", "+", "~", "(", ")", "[", "]", "{", "}", "context.x", " or ", " and ",
        " == 1", "**2", "2**", "1 if context.a else ", ".a", "['k']", ",", "'s'", "1+", " in ",
        "lambda: ", "__class__", "any(", "x for x in ", ": ", "\n", "#", '"', "\\",
    ]
)  # fmt: skip
COUNTS = st.sampled_from([1, 2, 3, 10, 63, 64, 65, 200, 1_000, 3_000, 100_000])


@st.composite
def condition_texts(draw: st.DrawFn, counts: st.SearchStrategy[int] = COUNTS) -> str:
    """Pieces of expressions repeated up to 100,000 times: long, deep, or garbled."""
    parts = draw(st.lists(st.tuples(PIECES, counts), min_size=1, max_size=3))
    return "".join(piece * count for piece, count in parts)


@st.composite
def structured_conditions(draw: st.DrawFn) -> Any:
    """``not`` / ``all`` / ``any`` nested up to 5,000 levels around a leaf."""
    leaf: Any = draw(st.sampled_from([{"key": "x", "equals": 1}, "context.x", {"not": 1}, []]))
    pattern = draw(st.lists(st.sampled_from(["not", "all", "any"]), min_size=1, max_size=3))
    for level in range(draw(COUNTS) % 5_001):
        kind = pattern[level % len(pattern)]
        leaf = {"not": leaf} if kind == "not" else {kind: [leaf]}
    return leaf


NAMES = st.sampled_from(["a", "b", "a", "topic"])


@st.composite
def input_texts(draw: st.DrawFn) -> str:
    """``input:`` blocks in flow and block style, names repeated, comments anywhere."""
    comment = st.sampled_from(["", "  # c", "  # a: 'quoted # not'"])
    lines = ["input:" + draw(comment)]
    for group in draw(st.lists(st.sampled_from(["required", "optional"]), max_size=3)):
        names = draw(st.lists(NAMES, max_size=4))
        if draw(st.booleans()):
            lines.append(f"  {group}: [{', '.join(names)}]{draw(comment)}")
        elif draw(st.booleans()):
            lines.append(f"  {group}:{draw(comment)}")
            lines += [f"    - {name}{draw(comment)}" for name in names]
        else:
            lines.append(f"  {group}:{draw(comment)}")
            lines += [f"    {name}: {draw(st.sampled_from(['str', 'int', '{type: str}']))}"
                      f"{draw(comment)}" for name in names]  # fmt: skip
    return "\n".join(lines) + "\n"


def _coded(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        assert CODE.match(diagnostic.code), diagnostic
        assert diagnostic.code != "FP190", diagnostic  # an internal error is a bug


_BASE = Path(tempfile.mkdtemp(prefix="folpipe-fuzz-"))
_COUNT = itertools.count()


def _workflow(files: dict[str, str]) -> Path:
    root = _BASE / f"case{next(_COUNT)}"  # no tempfile per case: it draws on `random`
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


# -- the properties ---------------------------------------------------------------------------


@FUZZ
@given(root=yaml_texts(), child=yaml_texts())
def test_task_yaml_gives_coded_diagnostics(root: str, child: str) -> None:
    path = _workflow(
        {"task.yaml": root, "subtasks/a/task.yaml": child, "subtasks/a/instructions.md": "x"}
    )
    _coded(validate_workflow(path))


@FUZZ
@given(text=tools_md_texts())
def test_tools_md_gives_coded_diagnostics_and_never_runs(text: str) -> None:
    path = _workflow({"instructions.md": "x", "tools.md": text, "subtasks/a/instructions.md": "y"})
    _coded(validate_workflow(path))
    _coded(validate_workflow(path, import_tools=True))  # the guarded import: never exits


@FUZZ
@given(text=replies_texts())
def test_replies_files_load_or_give_a_code(text: str) -> None:
    path = _workflow({"replies.yaml": text}) / "replies.yaml"
    try:
        script = load_replies(path)
    except FolpipeError as exc:
        assert CODE.match(exc.code)
        return
    assert script.latency_s >= 0


@FUZZ
@given(answers=st.lists(ANSWERS, min_size=1, max_size=3), typed=st.booleans())
def test_model_answers_end_in_a_clean_outcome_or_a_code(answers: list[str], typed: bool) -> None:
    output = {"a": "list" if typed else None}
    check_output(answers[0], output)  # never raises
    task = make_task(
        "t",
        provider=scripted_provider(),
        config={"output": output, "settings": {"output_retries": 1}},
    )
    workflow = workflow_around(make_task("root", "", children=[task]))
    provider = ScriptedProvider({"tasks": {"t": answers}})
    try:
        outcome = asyncio.run(run_task(task, workflow, {}, provider=provider))
    except FolpipeError as exc:
        assert CODE.match(exc.code)
        return
    strict_dumps(outcome.delta)  # what reaches the context is strict JSON


@settings(FUZZ, max_examples=200)
@given(text=condition_texts())
def test_conditions_of_any_length_and_depth_compile_or_give_a_code(text: str) -> None:
    try:
        compile_condition(text)
    except ExpressionError as exc:
        assert CODE.match(exc.code), exc


@settings(FUZZ, max_examples=100)
@given(spec=structured_conditions())
def test_structured_conditions_compile_or_give_a_code(spec: Any) -> None:
    try:
        compile_condition(spec)
    except ExpressionError as exc:
        assert CODE.match(exc.code), exc


@settings(FUZZ, max_examples=80)
@given(text=input_texts(), skip_if=condition_texts(st.sampled_from([1, 3, 64, 65, 3_000])))
def test_inputs_and_conditions_in_task_yaml_give_coded_diagnostics(text: str, skip_if: str) -> None:
    config = text + "conditions:\n  skip_if: " + json.dumps(skip_if) + "\n"  # JSON is YAML
    path = _workflow({"task.yaml": config, "instructions.md": "x"})
    _coded(validate_workflow(path))
