"""``folpipe test`` files: a workflow's companion test cases (Prefect-free).

Where: ``tests.yaml`` beside the root task.yaml, and every ``tests/*.yaml`` of the workflow.
Each file holds ``cases:``, a list of:

```yaml
- name: approves on the second review
  context: {topic: agents}            # initial context (over the root task.yaml's)
  models:                             # model stubs: the scripted replies format, per task
    review: [{output: {approved: false}}, {output: {approved: true}}]
    default: "ok"
  tools:                              # tool stubs: name -> the value the tool returns
    search_api: {results: [1, 2]}
  stubs:                              # subtree stubs: task path -> its output
    research: {findings: "..."}
  approvals:                          # approval gates: task name or path -> its answer
    publish: {approved: false, comment: "not yet"}
  expect:
    status: completed                 # completed | failed
    context: {approved: true}         # a subset of the final context
    paths: {"$.review.approved": true}  # JSON-path equality
    ran: [write, review]              # task paths (or names) that ran
    skipped: [publish]
    tool_calls: [{name: search_api, arguments: {query: agents}}]
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._process.files import read_workflow_file
from ...errors import ConfigError, suggest
from ...loader import SourceMap, parse_yaml

TESTS_FILE = "tests.yaml"
TESTS_DIR = "tests"
CASE_KEYS = (
    "name", "context", "models", "tools", "stubs", "approvals", "expect", "recorded",
    "recorded_from",
)  # fmt: skip
EXPECT_KEYS = ("status", "context", "paths", "ran", "skipped", "failed", "tool_calls")
STATUSES = ("completed", "failed")


class TestFileError(ConfigError):
    """A tests file that cannot be read as test cases (exit code 2)."""

    code = "FP181"


@dataclass(frozen=True)
class TestCase:
    """One case of a tests file."""

    name: str
    file: str
    line: int | None
    context: Mapping[str, Any] = field(default_factory=dict)
    models: Mapping[str, Any] = field(default_factory=dict)
    tools: Mapping[str, Any] = field(default_factory=dict)
    stubs: Mapping[str, Any] = field(default_factory=dict)
    approvals: Mapping[str, Any] = field(default_factory=dict)
    """Answers of approval gates: task name or path -> ``{input key: value}``."""
    expect: Mapping[str, Any] = field(default_factory=dict)
    recorded: Mapping[str, Any] = field(default_factory=dict)
    """``folpipe test record``: task path -> its recorded passes, replayed strictly."""


def test_files(root: Path) -> list[Path]:
    """The workflow's tests files: ``tests.yaml``, then ``tests/*.yaml`` in name order."""
    files = [root / TESTS_FILE] if (root / TESTS_FILE).is_file() else []
    folder = root / TESTS_DIR
    if folder.is_dir():
        files += sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))
    return files


def load_cases(root: Path) -> list[TestCase]:
    """Every case of every tests file of the workflow at ``root``."""
    files = test_files(root)
    if not files:
        raise TestFileError(
            f"no tests file in {root}",
            hint=f"write {TESTS_FILE} beside the root task.yaml (see docs/testing.md)",
        )
    cases: list[TestCase] = []
    for file in files:
        cases += _cases_of(file, file.relative_to(root).as_posix())
    return cases


def _cases_of(file: Path, rel: str) -> list[TestCase]:
    try:
        text = read_workflow_file(file).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TestFileError(f"{rel}: cannot read: {exc}", hint="save it as UTF-8") from None
    data, source, problems = parse_yaml(text, rel)
    if problems:
        first = problems[0]
        raise TestFileError(f"{rel}:{first.line}: {first.message}", hint="fix the YAML")
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list) or not cases:
        raise TestFileError(
            f"{rel}: expected a non-empty `cases:` list", hint="see docs/testing.md"
        )
    return [_case(item, index, rel, source) for index, item in enumerate(cases)]


def _case(item: Any, index: int, rel: str, source: SourceMap) -> TestCase:
    loc: tuple[str | int, ...] = ("cases", index)
    where = f"{rel}:{source.line(loc)}"
    if not isinstance(item, dict):
        raise TestFileError(f"{where}: a case is a mapping", hint=f"keys: {', '.join(CASE_KEYS)}")
    _known(item, CASE_KEYS, source, loc)
    expect = item.get("expect") or {}
    for key in ("context", "models", "tools", "stubs", "approvals", "expect", "recorded"):
        if not isinstance(item.get(key) or {}, dict):
            raise TestFileError(f"{where}: `{key}` must be a mapping")
    for task, answer in (item.get("approvals") or {}).items():
        if not isinstance(answer, dict):
            raise TestFileError(f"{where}: approvals.{task} must map input keys to values")
    _known(expect, EXPECT_KEYS, source, (*loc, "expect"))
    status = expect.get("status")
    if status is not None and status not in STATUSES:
        raise TestFileError(f"{where}: expect.status is one of {', '.join(STATUSES)}")
    for key in ("ran", "skipped", "failed", "tool_calls"):
        if not isinstance(expect.get(key) or [], list):
            raise TestFileError(f"{where}: expect.{key} must be a list")
    return TestCase(
        name=str(item.get("name") or f"case {index + 1}"),
        file=rel,
        line=source.line(loc),
        context=item.get("context") or {},
        models=item.get("models") or {},
        tools=item.get("tools") or {},
        stubs=item.get("stubs") or {},
        approvals=item.get("approvals") or {},
        expect=expect,
        recorded=_recorded(item.get("recorded") or {}, where),
    )


def _recorded(recorded: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    for path, passes in recorded.items():
        ok = isinstance(passes, list) and all(
            isinstance(p, dict) and isinstance(p.get("calls") or [], list) for p in passes
        )
        if not ok:
            raise TestFileError(f"{where}: recorded.{path} must be a list of passes with calls")
    return recorded


def _known(
    mapping: Mapping[str, Any],
    allowed: tuple[str, ...],
    source: SourceMap,
    loc: tuple[str | int, ...],
) -> None:
    for key in mapping:
        if key not in allowed:
            close = suggest(str(key), allowed)
            raise TestFileError(
                f"{source.file}:{source.line((*loc, key))}: unknown key {key!r}",
                hint=f"did you mean {close!r}?" if close else f"keys: {', '.join(allowed)}",
            )
