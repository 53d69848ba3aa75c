"""A real ``prefect server`` on a real PostgreSQL: it answers, records a flow run, and the
records are in PostgreSQL (read back both through Prefect's client and with ``psql``).

Skips loudly where no PostgreSQL can be started (see ``postgres.py``); ``.ci/run`` installs it.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from .postgres import Postgres
from .server import PrefectServer

pytestmark = [pytest.mark.server, pytest.mark.postgres, pytest.mark.timeout(300)]

PROBE_FLOW = """
from prefect import flow, task
from prefect.runtime import flow_run


@task(task_run_name="pg-probe-task")
def add_one(x: int) -> int:
    return x + 1


@flow(name="folpipe-pg-probe")
def probe(x: int = 1) -> int:
    print("FLOW_RUN_ID=" + flow_run.id, flush=True)
    return add_one(x)


if __name__ == "__main__":
    assert probe(41) == 42
"""


def read_back(server: PrefectServer, flow_run_id: UUID) -> dict[str, Any]:
    """The flow run's flow name, state and task runs, through Prefect's client (task runs are
    recorded from events, so poll briefly for them)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def read() -> dict[str, Any]:
        with temporary_settings(updates={PREFECT_API_URL: server.url}):
            async with get_client() as client:
                run = await client.read_flow_run(flow_run_id)
                flow = await client.read_flow(run.flow_id)
                only = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
                deadline = time.monotonic() + 30
                tasks = await client.read_task_runs(flow_run_filter=only)
                while not _recorded(tasks) and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                    tasks = await client.read_task_runs(flow_run_filter=only)
                return {
                    "flow": flow.name,
                    "state": run.state.name if run.state else None,
                    "parameters": run.parameters,
                    "tasks": {t.name: t.state.name if t.state else None for t in tasks},
                }

    return asyncio.run(read())


def _recorded(tasks: list[Any]) -> bool:
    """Every task run is in and in its final state (a Running record comes first)."""
    return bool(tasks) and all(t.state is not None and t.state.is_final() for t in tasks)


def test_server_on_postgres_answers_health(prefect_pg_server: PrefectServer) -> None:
    response = httpx.get(f"{prefect_pg_server.url}/health", timeout=10)
    assert response.status_code == 200 and response.json() is True
    assert prefect_pg_server.database_url.startswith("postgresql+asyncpg://")
    version = httpx.get(f"{prefect_pg_server.url}/admin/version", timeout=10)
    assert version.status_code == 200 and version.json().startswith("3.")


def test_flow_run_is_recorded_in_postgres(
    prefect_pg_server: PrefectServer, postgres: Postgres, tmp_path: Path
) -> None:
    script = tmp_path / "probe.py"
    script.write_text(PROBE_FLOW)
    done = prefect_pg_server.run([sys.executable, str(script)], cwd=tmp_path, timeout=240)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    match = re.search(r"FLOW_RUN_ID=([0-9a-f-]{36})", done.stdout)
    assert match, done.stdout
    flow_run_id = UUID(match.group(1))

    # through Prefect's client
    seen = read_back(prefect_pg_server, flow_run_id)
    assert seen == {
        "flow": "folpipe-pg-probe",
        "state": "Completed",
        "parameters": {"x": 41},
        "tasks": {"pg-probe-task": "Completed"},
    }

    # and the same rows, straight from PostgreSQL: this server's database really is PostgreSQL
    assert postgres.psql("SELECT version()").startswith("PostgreSQL ")
    tables = postgres.psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").split()
    assert {"alembic_version", "flow", "flow_run", "task_run"} <= set(tables)
    row = postgres.psql(f"SELECT state_type FROM flow_run WHERE id = '{flow_run_id}'").strip()
    assert row == "COMPLETED"
    timings = {**postgres.timings, "prefect_server_start_s": prefect_pg_server.startup_s}
    print("startup timings:", {k: round(v, 2) for k, v in timings.items()})
