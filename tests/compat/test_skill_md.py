"""SKILL.md as folpipe 0.1.8 (and Agent Skills) write it (point 5)."""

from __future__ import annotations

from prefect_folpipe import validate_workflow
from prefect_folpipe.validate import load_workflow

SKILL_018 = """\
---
name: fetch_data
description: Fetches raw data from an external API
input:
  - api_base_url
output:
  - raw_data
timeout: 120
---

Fetch records from the API at the provided base URL.
"""

AGENT_SKILL = """\
---
name: fetch-data
description: Fetch raw data from an API. Use when the workflow needs source records.
license: Apache-2.0
compatibility: Needs network access
metadata:
  author: team-data
  version: "1.0"
allowed-tools: Bash(curl:*) Read
---
Fetch the records.
"""

HELPER = """\
from agentflow.core.tool import tool


@tool(description="Add two numbers.")
def add(a: int, b: int) -> int:
    return a + b
"""


def test_018_front_matter_input_list_and_timeout(make_workflow):
    path = make_workflow({"subtasks/fetch_data/SKILL.md": SKILL_018})
    diagnostics = validate_workflow(path)
    assert [d.code for d in diagnostics if d.severity.value == "error"] == []
    task = load_workflow(path).find("fetch_data")
    assert task.config.input is not None and task.config.input.required == ["api_base_url"]
    assert task.config.output_keys == ("raw_data",)
    assert task.settings.timeout == 120
    assert task.instructions.strip().startswith("Fetch records")
    # 0.1.8's names break the Agent Skills name rule: a warning, the folder still runs
    assert [(d.code, d.line) for d in diagnostics] == [("FP170", 2)]


def test_agent_skills_keys_are_accepted_and_rules_hold(make_workflow):
    path = make_workflow({"subtasks/fetch-data/SKILL.md": AGENT_SKILL})
    assert validate_workflow(path) == []
    assert load_workflow(path).find("fetch-data").instructions == "Fetch the records.\n"


def test_agent_skills_rules_are_warnings_with_lines(make_workflow):
    long = "x" * 1025
    path = make_workflow(
        {
            "subtasks/a/SKILL.md": f"---\nname: b\ndescription: {long}\n---\nx\n",
            "subtasks/c/SKILL.md": "---\nname: Bad_Name\nmetadata: {tags: [1]}\n---\nx\n",
            "subtasks/d/SKILL.md": "---\nname: d\ndescription: ok\ntimeout: 5\n"
            "settings: {timeout: 9}\n---\nx\n",
        }
    )
    found = sorted((d.file, d.line, d.message.split(" (")[0][:40]) for d in validate_workflow(path))
    assert [(f, line) for f, line, _ in found] == [
        ("subtasks/a/SKILL.md", 2),  # name differs from the folder
        ("subtasks/a/SKILL.md", 3),  # description too long
        ("subtasks/c/SKILL.md", 2),  # no description (the front-matter's first line)
        ("subtasks/c/SKILL.md", 2),  # name rule
        ("subtasks/c/SKILL.md", 3),  # metadata not strings
        ("subtasks/d/SKILL.md", 4),  # timeout twice
    ]
    assert load_workflow(path).find("d").settings.timeout == 9


def test_scripts_beside_a_skill_are_tools(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"name": "calc"},
            "SKILL.md": "---\nname: calc\ndescription: adds\n---\nAdd 2 and 3.\n",
            "scripts/helper.py": HELPER,
            "scripts/cli_script.py": "print('a plain script, not a tool module')\n",
            "replies.yaml": {
                "default": [
                    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
                    {"echo": True},
                ]
            },
        }
    )
    # task.yaml wins over SKILL.md (FP107): make this one a pure SKILL.md skill
    (path / "task.yaml").unlink()
    (path / "SKILL.md").write_text(
        "---\nname: calc\ndescription: adds\nproviders:\n  default: scripted\n"
        "  scripted: {replies: replies.yaml}\n---\nAdd 2 and 3.\n"
    )
    assert [d.code for d in validate_workflow(path)] == ["FP170"]  # calc != folder name
    assert [t.name for t in load_workflow(path).root.tools] == ["add"]
    result = run(path)
    assert result.status == "completed"
    assert "5" in result.context["calc"]


def test_scripts_without_a_skill_are_not_tools_and_say_so(make_workflow):
    path = make_workflow({"instructions.md": "x", "scripts/helper.py": HELPER})
    [warning] = validate_workflow(path)
    assert (warning.code, warning.file) == ("FP171", "scripts/helper.py")
    assert load_workflow(path).root.tools == ()


def test_an_empty_skill_body_is_no_instructions(make_workflow):
    path = make_workflow(
        {
            "SKILL.md": "---\nname: x\ndescription: a branch\n---\n\n",
            "subtasks/a/instructions.md": "a",
        }
    )
    assert load_workflow(path).root.instructions is None
