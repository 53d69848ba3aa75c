"""Passes on Dask worker processes continue the run's trace: the run's traceparent travels to
them as plain data with the leaf task, and each worker exports its own spans."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
pytest.importorskip("prefect_dask")

from .receiver import otlp_receiver
from .test_otel_export import _files, ancestors, by_id, folpipe, operation, traced_env, write

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(600)]


def test_passes_on_dask_workers_join_the_runs_trace(cli_env, tmp_path):
    files = _files()
    files["task.yaml"]["settings"] = {"task_runner": "dask", "parallel_workers": 2}
    wf = write(tmp_path / "wf", files)
    with otlp_receiver() as (endpoint, got):
        proc = folpipe(traced_env(cli_env, endpoint), "run", wf, "--json")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout)["status"] == "completed"
        assert got.wait_for("invoke_workflow")
        agents = got.wait_for("invoke_agent", 2)
        spans = list(got.spans)
    [run] = operation(spans, "invoke_workflow")
    assert sorted(span["gen_ai.agent.name"] for span in agents) == ["fetch", "write"]
    assert len(operation(spans, "chat")) == 3 and len(operation(spans, "execute_tool")) == 2
    ours = [span for span in spans if span.get("gen_ai.operation.name")]
    assert {span.trace_id for span in ours} == {run.trace_id}  # one trace across processes
    index = by_id(spans)
    for agent in agents:  # under the run, through Prefect's task-run span when it has one
        assert run in ancestors(agent, index)
    # the passes ran, and were exported, in other processes than the flow's
    processes = {span.resource["service.instance.id"] for span in agents}
    assert run.resource["service.instance.id"] not in processes
