"""A deployment run on a process worker exports its trace like a local run: the worker's flow
process installs the exporter before Prefect starts the flow run, and the GenAI spans nest
under Prefect's flow-run span (issue 32)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from telemetry.receiver import otlp_receiver
from telemetry.test_otel_export import SECRET, _files, ancestors, by_id, operation, write

from ..runs import create_pool, folpipe, ok, run_worker_once, trigger
from ..server import PrefectServer

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]


def test_a_deployment_run_on_a_worker_exports_its_trace(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    pool = f"otel-{uuid.uuid4().hex[:6]}"
    create_pool(prefect_server, pool)
    wf = write(tmp_path / "traced", _files())
    args = ["deploy", str(wf), "--name", "otel", "--pool", pool, "--json"]
    deployed = json.loads(ok(folpipe(prefect_server, *args)).stdout)
    with otlp_receiver() as (endpoint, got):
        traced = {
            **{k: v for k, v in prefect_server.env.items() if not k.startswith("OTEL_")},
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_SERVICE_NAME": "otel-worker",
            "FOLPIPE_OTEL_TEST_TOKEN": SECRET,
        }
        worker_server = PrefectServer(
            prefect_server.url, prefect_server.home, traced, prefect_server.process
        )
        trigger(prefect_server, deployed["full_name"])
        run_worker_once(worker_server, pool, tmp_path / "worker.log")
        assert got.wait_for("invoke_workflow"), (tmp_path / "worker.log").read_text()[-3000:]
        spans = list(got.spans)
    index = by_id(spans)
    [run] = operation(spans, "invoke_workflow")
    assert run.resource["service.name"] == "otel-worker"
    agents = operation(spans, "invoke_agent")
    assert sorted(span["gen_ai.agent.name"] for span in agents) == ["fetch", "write"]
    assert len(operation(spans, "chat")) == 3 and len(operation(spans, "execute_tool")) == 2
    assert all(run in ancestors(agent, index) for agent in agents)
    # the worker's flow process exported Prefect's flow-run span too, around the run's span
    assert any(span.get("prefect.run.type") == "flow" for span in ancestors(run, index))
    assert SECRET not in "\n".join(span.text() for span in spans)
