"""End to end on a real ``prefect server`` backed by a real PostgreSQL (``prefect_pg_server``;
skips loudly where no PostgreSQL can be started): deploy, schedule, work, parameters, resume.

A workflow folder (``tests/fixtures/deploy/report``, offline on its scripted replies) is deployed
three ways onto a process work pool: ``folpipe deploy`` (with an interval schedule),
plain ``prefect --no-prompt deploy`` from the prefect.yaml written by ``folpipe deploy init``,
and a third deployment whose ``write`` task fails while a marker file exists. A
``prefect worker start --run-once`` executes the runs; the Prefect client checks states, task
run names, parameters, and that the failed deployment's second run resumes from checkpoints.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import pytest

from .server import FOLPIPE, PREFECT, PrefectServer, stop_process_group

FIXTURE = Path(__file__).parent.parent / "fixtures" / "deploy" / "report"
POOL = "folpipe-e2e"
RUN_ID = re.compile(r"flow-run/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
T = TypeVar("T")

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """Assert a command succeeded, showing its output when it did not."""
    assert done.returncode == 0, f"{done.args}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def copy_workflow(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURE, target)
    return target


def trigger(server: PrefectServer, deployment: str, *params: str) -> UUID:
    """``prefect deployment run`` and the id of the flow run it created."""
    args = [PREFECT, "deployment", "run", deployment]
    for param in params:
        args += ["--param", param]
    match = RUN_ID.search(ok(server.run(args)).stdout)
    assert match, "no flow run id in `prefect deployment run` output"
    return UUID(match.group(1))


def run_worker_once(server: PrefectServer, log: Path, timeout: float = 300.0) -> None:
    """A process worker that runs every due flow run of the pool, waits for them, and exits."""
    worker = server.spawn([PREFECT, "worker", "start", "--pool", POOL, "--run-once"], log=log)
    try:
        worker.wait(timeout=timeout)
    finally:
        stop_process_group(worker)
    assert worker.returncode == 0, log.read_text()[-4000:]


def with_client(server: PrefectServer, action: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``action(client)`` against the test server."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def main() -> T:
        with temporary_settings(updates={PREFECT_API_URL: server.url}):
            async with get_client() as client:
                return await action(client)

    return asyncio.run(main())


def flow_run_states(server: PrefectServer, ids: list[UUID]) -> dict[UUID, str]:
    async def read(client: Any) -> dict[UUID, str]:
        return {i: (await client.read_flow_run(i)).state.name for i in ids}

    return with_client(server, read)


def task_run_states(server: PrefectServer, flow_run_id: UUID, expected: int) -> dict[str, str]:
    """``{task run name: state name}``; task runs are recorded from events, so poll a little."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read(client: Any) -> dict[str, str]:
        runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
        return {run.name: run.state.name for run in runs if run.state}

    deadline = time.monotonic() + 30
    found = with_client(server, read)
    while len(found) < expected and time.monotonic() < deadline:
        time.sleep(1)
        found = with_client(server, read)
    return found


def keep_first_scheduled_run(server: PrefectServer, deployment: str) -> UUID:
    """Wait until the deployment's first scheduled run is due, pause the schedule and delete
    the other scheduled runs, so exactly one schedule firing reaches the worker."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    async def first_due(client: Any) -> UUID:
        found = await client.read_deployment_by_name(deployment)
        only = DeploymentFilter(id=DeploymentFilterId(any_=[found.id]))
        runs = await client.read_flow_runs(deployment_filter=only)
        first = min((r for r in runs if r.auto_scheduled), key=lambda r: r.expected_start_time)
        while first.expected_start_time.timestamp() > time.time():
            await asyncio.sleep(0.5)
        await client.pause_deployment(found.id)
        for run in await client.read_flow_runs(deployment_filter=only):
            if run.auto_scheduled and run.id != first.id and run.state.is_scheduled():
                await client.delete_flow_run(run.id)
        return first.id

    return with_client(server, first_due)


def evidence(workflow: Path, flow_run_id: UUID) -> dict[str, Any]:
    """What the `write` task's post_run hook recorded for one flow run."""
    record = workflow / ".folpipe" / "evidence" / f"{flow_run_id}.json"
    return json.loads(record.read_text())["context"]


def test_deploy_schedule_work_and_resume_on_a_real_server(
    prefect_pg_server: PrefectServer, tmp_path: Path
) -> None:
    server = prefect_pg_server
    ok(server.run([PREFECT, "work-pool", "create", POOL, "--type", "process"]))
    via_api, via_yaml, resumable = (copy_workflow(tmp_path, n) for n in ("api", "yaml", "resume"))

    # 1. folpipe deploy, with an interval schedule, through Prefect's API
    args = ["deploy", str(via_api), "--name", "api", "--pool", POOL, "--param", "topic=alpha"]
    deployed = json.loads(ok(server.run([FOLPIPE, *args, "--interval", "15", "--json"])).stdout)
    assert deployed["full_name"] == "report/api"
    assert deployed["entrypoint"] == "flow.py:flow"
    assert deployed["parameters"] == {"audience": "engineers", "topic": "alpha"}
    assert (via_api / "flow.py").is_file()

    # 2. plain `prefect deploy` from the prefect.yaml that `folpipe deploy init` writes
    init = [
        "deploy",
        "init",
        str(via_yaml),
        "--name",
        "yaml",
        "--pool",
        POOL,
        "--param",
        "topic=beta",
    ]
    ok(server.run([FOLPIPE, *init]))
    ok(server.run([PREFECT, "--no-prompt", "deploy", "--all"], cwd=via_yaml))

    # 3. a deployment whose last task fails while .folpipe/fail-write exists
    marker = resumable / ".folpipe" / "fail-write"
    marker.parent.mkdir()
    marker.touch()
    args = ["deploy", str(resumable), "--name", "resume", "--pool", POOL, "--param", "topic=delta"]
    ok(server.run([FOLPIPE, *args]))

    # 4. the generic entrypoint: prefect_folpipe.flows:run_workflow with path=<folder>
    generic = copy_workflow(tmp_path, "generic")
    args = ["deploy", str(generic), "--generic", "--name", "gen", "--pool", POOL, "--json"]
    deployed = json.loads(ok(server.run([FOLPIPE, *args, "--param", "topic=zeta"])).stdout)
    assert deployed["entrypoint"] == "prefect_folpipe.flows.run_workflow"
    assert deployed["parameters"]["path"] == str(generic.resolve())

    manual = trigger(server, "report/api", "topic=gamma")
    via_generic = trigger(server, "folpipe-run/gen")
    from_yaml = trigger(server, "report/yaml")
    doomed = trigger(server, "report/resume")
    scheduled = keep_first_scheduled_run(server, "report/api")
    run_worker_once(server, tmp_path / "worker-1.log")

    states = flow_run_states(server, [manual, from_yaml, scheduled, doomed, via_generic])
    assert states == {
        via_generic: "Completed",
        manual: "Completed",
        from_yaml: "Completed",
        scheduled: "Completed",
        doomed: "Failed",
    }

    # task runs are named after the folders' task paths
    assert task_run_states(server, manual, 2) == {"research": "Completed", "write": "Completed"}

    # parameters reached the workflow: the deployment's, the run's, the deploy: block's
    seen = evidence(via_api, manual)
    assert (seen["topic"], seen["audience"]) == ("gamma", "engineers")
    assert "gamma" in str(seen["research"])
    assert evidence(via_api, scheduled)["topic"] == "alpha"
    assert evidence(via_yaml, from_yaml)["topic"] == "beta"
    assert evidence(generic, via_generic)["topic"] == "zeta"
    assert task_run_states(server, via_generic, 2) == {
        "research": "Completed",
        "write": "Completed",
    }

    # the failed deployment's next run resumes from checkpoints
    assert task_run_states(server, doomed, 2) == {"research": "Completed", "write": "Failed"}
    marker.unlink()
    resumed = trigger(server, "report/resume")
    run_worker_once(server, tmp_path / "worker-2.log")
    assert flow_run_states(server, [resumed]) == {resumed: "Completed"}
    assert task_run_states(server, resumed, 2) == {"research": "Cached", "write": "Completed"}

    # folpipe status reads the same history
    status = json.loads(ok(server.run([FOLPIPE, "status", str(resumable), "--json"])).stdout)
    runs = {run["flow_run_id"]: run for run in status["runs"]}
    assert runs[str(resumed)]["state"] == "Completed"
    assert runs[str(resumed)]["tasks"]["cached"] == 1
    assert runs[str(doomed)]["state"] == "Failed"
    assert runs[str(doomed)]["tasks"]["failed"] == 1
