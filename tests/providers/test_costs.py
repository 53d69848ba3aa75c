"""What a run cost, through the real Anthropic and OpenAI SDKs (local wire servers): prompt-cache
hits reported, $ from the price table per task and per model, budget headroom, the summary and
cost artifacts, and ``folpipe status`` showing it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.api import arun_workflow
from prefect_folpipe.compile.options import RunOptions
from prefect_folpipe.compile.report._costs import CostReport, render_markdown

from .conftest import API_KEY, KEY_ENV, make_wire
from .wire import Reply

pytestmark = pytest.mark.prefect

ROOT = """name: priced
providers:
  default: claude
  claude: {{type: anthropic, model: claude-sonnet-4-5, base_url: "{anthropic}", api_key_env: {env}}}
  gpt: {{type: openai, model: gpt-4o, base_url: "{openai}", api_key_env: {env}}}
settings: {{max_retries: 0, token_budget: 100000, cost_budget: 1.0}}
subtasks: {{execution_type: sequential}}
"""
SONNET = (1000 * 3.0 + 4000 * 0.3 + 200 * 15.0) / 1e6  # fresh input, cache reads, output
GPT_4O = (500 * 2.5 + 1500 * 1.25 + 100 * 10.0) / 1e6


@pytest.fixture
def priced(tmp_path: Path, http, monkeypatch) -> Path:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, API_KEY)
    anthropic, openai = make_wire("anthropic", http), make_wire("openai", http)
    anthropic.add(Reply(text="A draft.", usage=(1000, 200, 4000, 0)))
    openai.add(Reply(text="Checked.", usage=(2000, 100, 1500, 0)))
    root = tmp_path / "priced"
    for folder, provider in (("10_write", "claude"), ("20_check", "gpt")):
        (root / "subtasks" / folder).mkdir(parents=True)
        (root / "subtasks" / folder / "instructions.md").write_text("Do your part.\n")
        (root / "subtasks" / folder / "task.yaml").write_text(f"agent: {{provider: {provider}}}\n")
    text = ROOT.format(anthropic=anthropic.base_url, openai=openai.base_url, env=KEY_ENV)
    (root / "task.yaml").write_text(text)
    return root


async def _artifacts(flow_run_id: str) -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from prefect_folpipe import flush_artifacts

    assert flush_artifacts(30)
    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return {artifact.key: artifact for artifact in found}


def test_cost_per_task_and_model_with_cache_hits_and_headroom(
    prefect_harness, priced: Path, cli_env
) -> None:  # type: ignore[no-untyped-def]
    result = asyncio.run(arun_workflow(priced, options=RunOptions(fresh=True)))
    assert result.status == "completed", result.error
    costs = result.costs
    write, check = costs.for_task("write"), costs.for_task("check")
    assert (write["cached_tokens"], write["input_tokens"]) == (4000, 5000)  # Anthropic reads
    assert (check["cached_tokens"], check["input_tokens"]) == (1500, 2000)  # OpenAI cached
    assert write["cost_usd"] == pytest.approx(SONNET) and check["cost_usd"] == pytest.approx(GPT_4O)
    models = {row["model"]: row for row in costs.models}
    assert set(models) == {"claude-sonnet-4-5", "gpt-4o"}
    assert models["gpt-4o"]["cached_tokens"] == 1500
    (budget,) = costs.budgets
    assert budget["tokens_used"] == 5200 + 2100 and budget["tokens_left"] == 100000 - 7300
    assert budget["cost_left_usd"] == pytest.approx(1.0 - SONNET - GPT_4O)

    artifacts = asyncio.run(_artifacts(result.flow_run_id))
    report = artifacts["priced-cost"].data
    assert f"# Cost of priced: ${SONNET + GPT_4O:.4f}" in report
    assert "| `write` | 1 | 0 | 5,000 | 4,000 | 200 | 0 |" in report
    assert "| `gpt-4o` | 1 | 0 | 2,000 | 1,500 | 100 | 0 |" in report
    assert "| the workflow | 100,000 tokens | 7,300 | 92,700 tokens |" in report
    rows = {row["task"]: row for row in json.loads(artifacts["priced-summary"].data)}
    assert rows["write"]["usd"] == pytest.approx(SONNET, abs=1e-6)  # cache reads: above
    assert rows["check"]["usd"] == pytest.approx(GPT_4O)

    from inprocess import folpipe_in_process  # what `folpipe status` prints, in-process

    status = folpipe_in_process("status", str(priced), "--json", api_url=cli_env["PREFECT_API_URL"])
    assert status.returncode == 0, status.stderr[-2000:]
    (run,) = json.loads(status.stdout)["runs"]
    assert run["flow_run_id"] == result.flow_run_id
    assert run["cost_usd"] == pytest.approx(SONNET + GPT_4O)
    assert run["model_calls"] == 2


def test_the_cost_artifact_shows_replayed_calls_and_unpriced_models() -> None:
    row = {
        "model_calls": 1,
        "replayed_calls": 11,
        "input_tokens": 900,
        "cached_tokens": 0,
        "output_tokens": 9,
        "replayed_tokens": 9000,
        "cost_usd": 0.0,
    }
    report = CostReport(
        tasks=[{"task": "agent", **row}],
        models=[{"model": "my-finetune", **row}],
        unpriced=["my-finetune"],
    )
    text = render_markdown(report, "w")
    assert "| `agent` | 1 | 11 | 900 | 0 | 9 | 9,000 | 0.0000 |" in text
    assert "No price for: my-finetune" in text
