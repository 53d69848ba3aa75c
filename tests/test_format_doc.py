"""docs/format.md is the folder format's reference: it names every key of the task.yaml schema,
has a section per file kind, its task.yaml examples are valid, its links land, and the README
links it and shows a valid two-file task before the CLI table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from prefect_folpipe import validate_workflow
from prefect_folpipe.workflow.config import TaskConfig, task_yaml_json_schema

REPO = Path(__file__).parent.parent
FORMAT = REPO / "docs" / "format.md"
TEXT = FORMAT.read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")
FILE_KINDS = (
    "instructions.md",
    "task.yaml",
    "tools.md",
    "tools/",
    "hooks/",
    "subtasks/",
    "shared/",
    "SKILL.md",
    "input/",
)
TOPICS = ("Execution types", "Conditions", "Outputs", "Approvals")
EXECUTION_TYPES = ("parallel", "sequential", "graph", "loop", "priority_groups")
FENCE = re.compile(r"^(`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)^\1[ \t]*$", re.M | re.S)


def headings(level: str) -> list[str]:
    return [m[1].strip() for m in re.finditer(rf"^{level} (.+)$", TEXT, re.M)]


def blocks(text: str, info: str) -> list[str]:
    return [m["body"] for m in FENCE.finditer(text) if m["info"].strip() == info]


def documented(key: str) -> bool:
    return f"`{key}`" in TEXT or re.search(rf"`{re.escape(key)}[:=` ]", TEXT) is not None


def test_every_top_level_key_of_the_schema_is_in_the_key_table() -> None:
    schema = task_yaml_json_schema()
    table = TEXT[TEXT.index("### Every key") :]
    rows = {m[1] for m in re.finditer(r"^\| `([^`]+)` \|", table, re.M)}
    assert set(schema["properties"]) <= rows, set(schema["properties"]) - rows


def test_every_nested_key_of_the_schema_is_named() -> None:
    missing = {
        f"{model}.{key}"
        for model, definition in task_yaml_json_schema()["$defs"].items()
        for key in definition.get("properties", {})
        if not documented(key)
    }
    assert not missing, missing


def test_every_settings_and_subtasks_key_has_a_row() -> None:
    rows = {m[1] for m in re.finditer(r"^\| `([^`]+)` \|", TEXT, re.M)}
    schema = task_yaml_json_schema()["$defs"]
    for model in ("Settings", "SubtasksConfig", "ApprovalConfig"):
        assert set(schema[model]["properties"]) <= rows, (model, set(schema[model]["properties"]))


def test_each_file_kind_and_topic_has_its_own_section() -> None:
    sections = headings("##")
    for kind in FILE_KINDS:
        assert f"`{kind}`" in sections, kind
    for topic in TOPICS:
        assert topic in sections, topic
    assert [f"`{t}`" + (" (the default)" if t == "parallel" else "") for t in EXECUTION_TYPES] == [
        h for h in headings("###") if h.strip("`").split("`")[0] in EXECUTION_TYPES
    ]


@pytest.mark.parametrize("body", blocks(TEXT, "yaml"), ids=lambda body: body.split("\n")[0][:40])
def test_each_yaml_example_is_a_valid_task_yaml(body: str) -> None:
    TaskConfig.model_validate(yaml.safe_load(body))


LINKED = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "examples" / "README.md",
    REPO / "deployments" / "README.md",
    REPO / "benchmarks" / "README.md",
]


def _without_code(text: str) -> str:
    return re.sub(r"^(`{3,}|~{3,}).*?^\1", "", text, flags=re.M | re.S)


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to
    hyphens."""
    text = _without_code(path.read_text(encoding="utf-8"))
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", text, re.M)
    }


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(REPO)))
def test_the_relative_links_land(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", _without_code(page.read_text(encoding="utf-8"))):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file) if file else page
        assert path.exists(), f"{page.name}: {target}"
        if anchor:
            assert anchor in _anchors(path), f"{page.name}: {target}"


def test_the_readme_links_the_reference_and_shows_a_two_file_task_first() -> None:
    start = README.index("## A workflow folder")
    section = README[start : README.index("\n## ", start + 1)]
    assert "(docs/format.md)" in section
    assert "folder specification" not in README
    assert README.index("`hello/instructions.md`") < README.index("## CLI")


def test_the_readme_two_file_task_is_valid(tmp_path: Path) -> None:
    section = README[README.index("## A workflow folder") :]
    (tmp_path / "hello").mkdir()
    (tmp_path / "hello" / "instructions.md").write_text(blocks(section, "markdown")[0])
    (tmp_path / "hello" / "task.yaml").write_text(blocks(section, "yaml")[0])
    assert validate_workflow(tmp_path / "hello") == []
