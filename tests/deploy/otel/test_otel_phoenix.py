"""A run's trace as Arize Phoenix stores it, for a local run, a run on Dask workers and a
deployment run on a process worker: each exports its spans over OTLP/HTTP (protobuf) straight
to one Phoenix on 127.0.0.1 (``phoenix.py``), and the tree is read back through Phoenix's REST
API. The runs talk to the session's ``prefect server``.

Phoenix lives in ``.venv-phoenix`` (the README's test command installs it); without it the
tests skip, and fail under ``CI=true`` or ``FOLPIPE_REQUIRE_PHOENIX=1``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
pytest.importorskip("prefect_dask")

from telemetry.test_otel_export import SECRET, _files, folpipe, write

from ..phoenix import Phoenix, executable, missing, phoenix, wait_for
from ..runs import create_pool, ok, run_worker_once, trigger
from ..runs import folpipe as folpipe_here
from ..server import PrefectServer

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]
Span = dict[str, Any]


@dataclass
class Backends:
    """The file's Phoenix and the session's Prefect server."""

    phoenix: Phoenix
    prefect: PrefectServer


@pytest.fixture(scope="module")
def backends(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backends]:
    """One Phoenix for the file's three runs (each run writes to a project of its own). It
    starts first and the session's Prefect server (when not running yet) starts meanwhile: the
    tests ask for the server through this fixture, since pytest would set up a session-scoped
    fixture they asked for themselves before this module-scoped one."""
    program = executable() or missing()
    with phoenix(program, tmp_path_factory.mktemp("phoenix")) as started:
        prefect = request.getfixturevalue("prefect_server")
        yield Backends(started.ready(), prefect)


def traced(backends: Backends, project: str) -> dict[str, str]:
    """The Prefect server's environment, exporting to Phoenix into the project ``project``."""
    return {k: v for k, v in backends.prefect.env.items() if not k.startswith("OTEL_")} | {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": backends.phoenix.traces_endpoint,
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "FOLPIPE_OTEL_TEST_TOKEN": SECRET,
    }


def operation(spans: list[Span], name: str) -> list[Span]:
    return [s for s in spans if s["attributes"].get("gen_ai.operation.name") == name]


def complete(spans: list[Span]) -> bool:
    """Every span of the workflow arrived (the passes' from their own processes too), and
    Prefect's flow-run span (it ends last, so it may reach Phoenix in a later batch)."""
    counts = {"invoke_workflow": 1, "invoke_agent": 2, "chat": 3, "execute_tool": 2}
    prefects = any(s["attributes"].get("prefect.run.type") == "flow" for s in spans)
    return prefects and all(len(operation(spans, name)) >= n for name, n in counts.items())


def read_back(backends: Backends, project: str) -> list[Span]:
    spans = wait_for(backends.phoenix.url, project, complete)
    assert complete(spans), f"Phoenix stored {sorted(s['name'] for s in spans)}"
    return spans


def assert_the_runs_tree(spans: list[Span]) -> Span:
    """The tree of ``_files()``'s run, as Phoenix shows it; returns the run's span."""
    by_id = {span["context"]["span_id"]: span for span in spans}

    def ancestors(span: Span) -> list[Span]:
        chain = []
        while span.get("parent_id") in by_id:
            span = by_id[span["parent_id"]]
            chain.append(span)
        return chain

    [run] = operation(spans, "invoke_workflow")
    agents, chats = operation(spans, "invoke_agent"), operation(spans, "chat")
    tools = operation(spans, "execute_tool")
    assert run["attributes"]["gen_ai.agent.name"] == "traced"
    assert sorted(s["attributes"]["gen_ai.agent.name"] for s in agents) == ["fetch", "write"]
    assert len(chats) == 3  # fetch: its tool calls, then its answer; write: its answer
    assert sorted(s["attributes"]["gen_ai.tool.name"] for s in tools) == ["lookup", "today"]
    ours = agents + chats + tools + [run]
    assert {s["context"]["trace_id"] for s in ours} == {run["context"]["trace_id"]}
    for span in chats + tools:  # inside the pass of their own task
        owner = next(a for a in ancestors(span) if a["attributes"].get("gen_ai.operation.name"))
        assert owner in agents
        assert owner["attributes"]["gen_ai.agent.name"] == span["attributes"]["folpipe.task.path"]
    assert all(run in ancestors(agent) for agent in agents)
    assert all(chat["attributes"]["gen_ai.usage.input_tokens"] > 0 for chat in chats)
    assert all(chat["attributes"]["gen_ai.usage.output_tokens"] > 0 for chat in chats)
    assert run["attributes"]["folpipe.model_calls"] == 3
    assert {chat["span_kind"] for chat in chats} == {"LLM"}  # Phoenix read them as model calls
    # Prefect's flow-run span is exported too, around the run's
    assert any(a["attributes"].get("prefect.run.type") == "flow" for a in ancestors(run))
    assert SECRET not in json.dumps(spans)
    return run


def run_here(backends: Backends, files: dict[str, Any], tmp_path: Path) -> list[Span]:
    """``folpipe run`` of ``files`` in a process of its own; its spans as Phoenix stored them."""
    project = f"run-{uuid.uuid4().hex[:8]}"
    proc = folpipe(traced(backends, project), "run", write(tmp_path / "wf", files), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["status"] == "completed"
    return read_back(backends, project)


def test_a_local_run(backends: Backends, tmp_path: Path) -> None:
    assert_the_runs_tree(run_here(backends, _files(), tmp_path))


def test_a_run_on_dask_workers(backends: Backends, tmp_path: Path) -> None:
    files = _files()
    files["task.yaml"]["settings"] = {"task_runner": "dask", "parallel_workers": 2}
    assert_the_runs_tree(run_here(backends, files, tmp_path))


def test_a_deployment_run_on_a_worker(backends: Backends, tmp_path: Path) -> None:
    server = backends.prefect
    pool = f"phoenix-{uuid.uuid4().hex[:6]}"
    create_pool(server, pool)  # `prefect work-pool create POOL --type process`
    wf = write(tmp_path / "traced", _files())
    args = ["deploy", str(wf), "--name", "phoenix", "--pool", pool, "--json"]
    deployed = json.loads(ok(folpipe_here(server, *args)).stdout)
    project = f"worker-{uuid.uuid4().hex[:8]}"
    worker = PrefectServer(server.url, server.home, traced(backends, project), server.process)
    trigger(server, deployed["full_name"])
    run_worker_once(worker, pool, tmp_path / "worker.log")
    assert_the_runs_tree(read_back(backends, project))
