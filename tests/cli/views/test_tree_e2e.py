"""``folpipe tree`` over real fixture folders, including ``--why TOOL``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from prefect_folpipe.cli import cli

from ..cli_helpers import CLI_FIXTURES

VALID = CLI_FIXTURES / "valid"
BROKEN = CLI_FIXTURES / "broken"


def _tree(*args: str) -> object:
    return CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["tree", *args])


def _nodes(node: dict) -> dict[str, dict]:
    found = {node["path"]: node}
    for child in node["children"]:
        found.update(_nodes(child))
    return found


def test_json_tree_of_a_real_workflow() -> None:
    result = _tree(str(VALID), "--json")
    assert result.exit_code == 0, result.output
    root = json.loads(result.stdout)
    nodes = _nodes(root)
    assert list(nodes) == [
        "",
        "fetch",
        "fetch/fetch_a",
        "fetch/fetch_b",
        "fetch/merge",
        "review",
        "review/write",
        "review/check",
        "old",
    ]
    assert (root["name"], root["kind"], root["execution_type"]) == (
        "report_flow",
        "branch",
        "sequential",
    )
    assert nodes["fetch"]["execution_type"] == "graph"
    assert nodes["review"]["execution_type"] == "loop"
    assert nodes["fetch/merge"]["settings"]["timeout"] == 60.0
    assert nodes["fetch/fetch_a"]["settings"]["timeout"] == 300.0
    assert nodes["fetch"]["settings"]["parallel_workers"] == 2
    assert nodes["fetch/fetch_a"]["priority"] == 10
    assert nodes["old"]["enabled"] is False
    assert all(node["provider"] == "scripted" for node in nodes.values())
    assert nodes[""]["tools"] == ["admin_api", "root_only"]
    assert nodes["fetch"]["tools"] == ["admin_api"]
    assert nodes["fetch/fetch_a"]["tools"] == []
    assert nodes["fetch/fetch_b"]["tools"] == ["format_results"]
    assert nodes["review/write"]["tools"] == ["admin_api"]


def test_human_tree_of_a_real_workflow() -> None:
    result = _tree(str(VALID))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "report_flow  branch · sequential · priority 50 · scripted" in out
    assert "tools: admin_api (own), root_only (own)" in out
    assert "tools: format_results (from shared/tools.md)" in out
    assert "tools: admin_api (inherited from report_flow)" in out
    assert "overrides: timeout=60.0" in out
    assert "old  leaf · priority 90 · scripted  disabled" in out


def test_why_explains_each_scoping_rule() -> None:
    rows = {}
    for tool in ("admin_api", "root_only", "format_results"):
        result = _tree(str(VALID), "--why", tool, "--json")
        assert result.exit_code == 0, result.output
        rows[tool] = {row["path"]: row for row in json.loads(result.stdout)}
    admin = rows["admin_api"]
    assert admin["fetch"]["visible"] is True
    assert admin["fetch"]["reason"] == "inherited from report_flow"
    assert admin["fetch/fetch_a"]["visible"] is False
    assert admin["fetch/fetch_a"]["reason"] == "blocked by fetch (block_tools)"
    assert admin["old"]["enabled"] is False
    assert rows["root_only"]["review"]["reason"] == "report_flow declares it with scope: local"
    shared = rows["format_results"]
    assert shared["fetch/fetch_b"]["visible"] is True
    assert "add it to tools.use_shared" in shared["fetch/merge"]["reason"]


def test_why_human_table_and_unknown_tool() -> None:
    result = _tree(str(VALID), "--why", "admin_api")
    assert result.exit_code == 0
    assert "who gets 'admin_api'" in result.stdout
    assert "blocked by fetch (block_tools)" in result.stdout
    unknown = _tree(str(VALID), "--why", "admin_ap")
    assert unknown.exit_code == 2
    assert "did you mean 'admin_api'?" in unknown.output


def test_invalid_workflow_prints_diagnostics_and_exits_1() -> None:
    result = _tree(str(BROKEN))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "FP103" in result.stderr and "subtasks/10_fetch/task.yaml:2" in result.stderr
    assert result.stdout == ""
    as_json = _tree(str(BROKEN), "--json")
    assert as_json.exit_code == 1
    payload = json.loads(as_json.stdout)
    assert payload["ok"] is False and payload["error"]["code"] == "FP100"
    assert "FP103" in {error["code"] for error in payload["errors"]}


def test_warnings_are_printed_after_the_tree() -> None:
    result = _tree(str(CLI_FIXTURES / "warnings"))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("warn_flow") < out.index("Warnings") < out.index("FP222")
    assert "no_such_tool" in out
