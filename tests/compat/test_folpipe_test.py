"""``folpipe test PATH`` (point 11): companion test cases with stubs, run for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from prefect_folpipe.cli import cli
from prefect_folpipe.cli.init import WORKFLOW_TEMPLATES, scaffold

pytestmark = pytest.mark.prefect

TOOLS_MD = """\
## search_api
> type: python

Search the API.

```python
def search_api(query: str) -> dict:
    raise RuntimeError("the real API must not be called in a test")
```
"""


def folpipe_test(path: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["test", str(path), *args])


def graph_workflow(make_workflow: Any, cases: list[dict[str, Any]]) -> Path:
    """fetch -> score (typed output) -> [publish if good | skipped otherwise], a graph."""
    return make_workflow(
        {
            "task.yaml": {"name": "g", "subtasks": {"execution_type": "graph"}},
            "subtasks/fetch/instructions.md": "Fetch with the tool.",
            "subtasks/fetch/tools.md": TOOLS_MD,
            "subtasks/fetch/task.yaml": {"output": {"items": "list"}},
            "subtasks/score/task.yaml": {"depends_on": ["fetch"], "output": {"score": "int"}},
            "subtasks/score/instructions.md": "Score.",
            "subtasks/publish/task.yaml": {
                "depends_on": ["score"],
                "conditions": {"skip_if": "context.score < 5"},
            },
            "subtasks/publish/instructions.md": "Publish.",
            "tests.yaml": {"cases": cases},
        }
    )


FETCH = [
    {"tool_calls": [{"name": "search_api", "arguments": {"query": "prefect"}}]},
    {"output": {"items": ["a", "b"]}},
]


def test_passing_cases_print_a_table_and_exit_zero(prefect_harness, make_workflow):  # type: ignore[no-untyped-def]
    cases = [
        {
            "name": "good score publishes",
            "models": {"fetch": FETCH, "score": [{"output": {"score": 8}}], "default": "done"},
            "tools": {"search_api": {"hits": 2}},
            "expect": {
                "status": "completed",
                "context": {"items": ["a", "b"], "score": 8},
                "paths": {"$.fetch.items[1]": "b", "$.publish": "done"},
                "ran": ["fetch", "score", "publish"],
                "tool_calls": [{"name": "search_api", "arguments": {"query": "prefect"}}],
            },
        },
        {
            "name": "low score skips publishing",
            "stubs": {"fetch": {"items": []}},
            "models": {"score": [{"output": {"score": "2"}}]},  # coerced like a live answer
            "expect": {"status": "completed", "ran": ["score"], "skipped": ["publish"]},
        },
    ]
    path = graph_workflow(make_workflow, cases)
    result = folpipe_test(path)
    assert result.exit_code == 0, result.output
    assert "good score publishes" in result.output and "2 passed, 0 failed" in result.output
    assert not (path / ".folpipe").exists(), "a test run leaves no checkpoints in the folder"


def test_failures_are_listed_and_exit_one(prefect_harness, make_workflow):  # type: ignore[no-untyped-def]
    cases = [
        {
            "name": "wrong expectations",
            "models": {"fetch": FETCH, "score": [{"output": {"score": 1}}]},
            "tools": {"search_api": {"hits": 0}},
            "expect": {
                "status": "completed",
                "context": {"score": 9},
                "ran": ["publish"],
                "tool_calls": [{"name": "search_api", "arguments": {"query": "other"}}],
            },
        },
        {
            "name": "a stub that does not fit the declared output",
            "stubs": {"score": {"score": "high"}},
            "models": {"fetch": FETCH},
            "tools": {"search_api": {}},
            "expect": {"status": "completed"},
        },
        {
            "name": "stubbed tools still check arguments",
            "models": {
                "fetch": [
                    {"tool_calls": [{"name": "search_api", "arguments": {"q": 1}}]},
                    {"output": {"items": []}},
                ],
                "default": {"output": {"score": 1}},
            },
            "tools": {"search_api": {"hits": 1}},
            "expect": {"status": "completed", "tool_calls": [{"name": "search_api"}]},
        },
    ]
    path = graph_workflow(make_workflow, cases)
    result = folpipe_test(path, "--json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert (doc["ok"], doc["passed"], doc["failed"]) == (False, 1, 2)
    wrong, stub, checked = doc["cases"]
    assert "context.score is 1, expected 9" in wrong["failures"]
    assert "ran: task 'publish' is 'skipped'" in wrong["failures"]
    assert any(f.startswith("no tool call matches") for f in wrong["failures"])
    assert stub["status"] == "failed"
    assert any("FP312" in f or "does not fit" in f for f in stub["failures"])
    assert checked["ok"], checked  # the call was made (and answered FP231), so it matches


def test_tests_folder_and_select(prefect_harness, make_workflow):  # type: ignore[no-untyped-def]
    path = make_workflow({"instructions.md": "Say hi."})
    (path / "tests").mkdir()
    case = {"models": {"default": "hi"}, "expect": {"status": "completed"}}
    (path / "tests" / "a.yaml").write_text(yaml.safe_dump({"cases": [{"name": "one", **case}]}))
    (path / "tests" / "b.yaml").write_text(yaml.safe_dump({"cases": [{"name": "two", **case}]}))
    result = folpipe_test(path, "--json", "-k", "two")
    assert result.exit_code == 0, result.output
    assert [c["name"] for c in json.loads(result.stdout)["cases"]] == ["two"]


@pytest.mark.parametrize(
    ("tests_yaml", "message"),
    [
        (None, "no tests file"),
        ({"cases": []}, "non-empty `cases:`"),
        ({"cases": [{"name": "x", "expects": {}}]}, "did you mean 'expect'?"),
        ({"cases": [{"name": "x", "stubs": {"nope": 1}}]}, "stubs unknown task 'nope'"),
    ],
)
def test_bad_tests_files_are_coded_errors(make_workflow, tests_yaml, message):  # type: ignore[no-untyped-def]
    files: dict[str, Any] = {"instructions.md": "x"}
    if tests_yaml is not None:
        files["tests.yaml"] = tests_yaml
    path = make_workflow(files)
    result = folpipe_test(path, "--json")
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert doc["error"]["code"] == "FP181"
    assert message in doc["error"]["message"] + (doc["error"].get("hint") or "")


@pytest.mark.parametrize("template", WORKFLOW_TEMPLATES)
def test_init_templates_ship_passing_tests(prefect_harness, tmp_path, template):  # type: ignore[no-untyped-def]
    scaffold(tmp_path / "wf", template)
    result = folpipe_test(tmp_path / "wf", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True
