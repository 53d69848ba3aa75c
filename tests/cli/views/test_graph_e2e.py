"""``folpipe graph`` over real fixture folders."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from prefect_folpipe.cli import cli

from ..cli_helpers import CLI_FIXTURES

VALID = CLI_FIXTURES / "valid"


def test_text_graph_of_a_real_workflow() -> None:
    result = CliRunner().invoke(cli, ["graph", str(VALID)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "report_flow  (sequential)",
        "├── 1. fetch  (graph · max 2 at once)",
        "│   ├── [stage 1] fetch_a",
        "│   ├── [stage 1] fetch_b",
        "│   └── [stage 2] merge  [after fetch_a, fetch_b]",
        "├── 2. review  (loop · until context.check.approved == true · max 3 iterations"
        " · on max: fail)",
        "│   ├── 1. write",
        "│   └── 2. check",
        "└── old  [disabled]",
    ]


def test_mermaid_graph_in_a_real_process() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", "graph", str(VALID), "--mermaid"],
        capture_output=True,
        text=True,
        check=True,
    )
    chart = out.stdout
    assert chart.startswith("flowchart TD\n")
    assert chart.count("subgraph ") == 3
    assert "after fetch_a, fetch_b" in chart
    assert '-.->|"next iteration (max 3)"|' in chart
    assert "classDef disabled" in chart


def test_invalid_workflow_exits_1_without_traceback() -> None:
    result = CliRunner().invoke(cli, ["graph", str(CLI_FIXTURES / "broken")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "FP150" in result.stderr


def test_json_graph_lists_nodes_and_typed_edges() -> None:
    import json

    result = CliRunner().invoke(cli, ["graph", str(VALID), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    nodes = {node["path"]: node for node in data["nodes"]}
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
    assert nodes["fetch/merge"]["parent"] == "fetch"
    assert nodes["fetch/merge"]["notes"] == ["after fetch_a, fetch_b"]
    assert nodes["old"]["enabled"] is False
    assert nodes["review"]["execution_type"] == "loop"
    edges = {(edge["from"], edge["to"], edge["kind"]) for edge in data["edges"]}
    assert edges == {
        ("fetch", "review", "order"),
        ("fetch/fetch_a", "fetch/merge", "depends_on"),
        ("fetch/fetch_b", "fetch/merge", "depends_on"),
        ("review/write", "review/check", "order"),
        ("review/check", "review/write", "next_iteration"),
    }
    loop_edge = next(edge for edge in data["edges"] if edge["kind"] == "next_iteration")
    assert loop_edge["label"] == "next iteration (max 3)"
