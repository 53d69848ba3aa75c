"""Helpers of the deployment tests: commands, triggers, a worker, reading runs back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar
from uuid import UUID

import anyio

from prefect_folpipe.workflow.names import restored_paths

from .server import PREFECT, PrefectServer, stop_process_group

REPORT = Path(__file__).parent.parent / "fixtures" / "deploy" / "report"
T = TypeVar("T")


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """Assert a command succeeded, showing its output when it did not."""
    assert done.returncode == 0, f"{done.args}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def copy_workflow(tmp_path: Path, name: str, source: Path = REPORT) -> Path:
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


def folpipe(server: PrefectServer, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``folpipe ARGS`` against ``server``, run in this process (``tests/inprocess.py``: the
    same exit code, stdout and stderr, without a second or two of start-up). For commands
    that talk to the API: ``deploy``, ``deploy init``, ``status``, ``approvals``, ``resume``
    of a deployment's run (through the API). A command that runs a flow here (``run``) only
    against the session's server: this process sends its events there, whatever ``server``
    is."""
    from inprocess import folpipe_in_process

    return folpipe_in_process(*map(str, args), api_url=server.url)


def cli_value(text: str) -> Any:
    """A ``--param key=value`` value as Prefect's CLI reads it: JSON, else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        if '"' in text:
            raise
        return text


def trigger(server: PrefectServer, deployment: str, *params: str) -> UUID:
    """What ``prefect deployment run NAME --param k=v ...`` does, through the API in this
    process (no CLI process to start): a flow run of the deployment, Scheduled for now, with
    the parameters (an unknown one fails as the CLI refuses it); its id."""
    from prefect.states import Scheduled

    parameters = {key: cli_value(value) for key, _, value in (p.partition("=") for p in params)}

    async def create(client: Any) -> UUID:
        found = await client.read_deployment_by_name(deployment)
        schema = found.parameter_openapi_schema or {}
        unknown = set(parameters) - set(schema.get("properties", {}))
        assert not unknown, f"{deployment} has no parameters {sorted(unknown)}"
        flow_run = await client.create_flow_run_from_deployment(
            found.id, parameters=parameters, state=Scheduled()
        )
        return UUID(str(flow_run.id))

    return with_client(server, create)


def create_pool(server: PrefectServer, name: str, *, overwrite: bool = False) -> None:
    """What ``prefect work-pool create NAME --type process`` does, through the API in this
    process: a process work pool with Prefect's default job template."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()

    async def create(client: Any) -> None:
        pool = WorkPoolCreate(name=name, type="process", base_job_template=template)
        await client.create_work_pool(work_pool=pool, overwrite=overwrite)

    with_client(server, create)


def wait_for_deployment(
    server: PrefectServer,
    name: str,
    alive: Callable[[], None],
    *,
    polled: bool = False,
    timeout: float = 120.0,
) -> None:
    """Poll the API until deployment ``name`` exists (``alive()`` asserts that what should
    register it still runs); ``polled``: and until something polls it for runs (its status
    Ready: a ``serve`` process has started its runner, not only registered it)."""
    from prefect.exceptions import ObjectNotFound

    async def exists(client: Any) -> bool:
        try:
            found = await client.read_deployment_by_name(name)
        except ObjectNotFound:
            return False
        return not polled or str(getattr(found.status, "value", found.status)) == "READY"

    deadline = time.monotonic() + timeout
    while not with_client(server, exists):
        alive()
        assert time.monotonic() < deadline, f"{name} never registered"
        time.sleep(0.2)


def run_worker_once(
    server: PrefectServer, pool: str, log: Path, timeout: float = 300.0, *, cli: bool = False
) -> None:
    """A process worker that runs every due flow run of the pool, waits for them, and exits.

    By default Prefect's ``ProcessWorker`` runs in this process (what ``prefect worker start
    --pool POOL --run-once`` runs, without the seconds a new process spends importing
    Prefect), in the environment and settings of ``server.env``, as the command would be:
    each flow run is still its own process, started with the environment the command's
    worker gives it, and its output and the worker's log go to ``log``. ``cli``: the command
    itself, as a process of its own (the end-to-end path)."""
    if cli:
        worker = server.spawn([PREFECT, "worker", "start", "--pool", pool, "--run-once"], log=log)
        try:
            worker.wait(timeout=timeout)
        finally:
            stop_process_group(worker)
        assert worker.returncode == 0, log.read_text()[-4000:]
        return
    with log.open("a", buffering=1) as out, _as_worker_process(server.env, out):
        from prefect.workers.process import ProcessWorker

        def printer(*args: Any, **kwargs: Any) -> None:
            print(*args, **{**kwargs, "file": out})

        async def main() -> None:
            with anyio.fail_after(timeout):
                await ProcessWorker(work_pool_name=pool).start(run_once=True, printer=printer)

        asyncio.run(main())


@contextlib.contextmanager
def _as_worker_process(env: dict[str, str], out: TextIO) -> Iterator[None]:
    """This process as a worker process started with ``env``: that environment, Prefect
    settings read from it, and stdout, stderr and Prefect's log into ``out``."""
    import logging
    import os

    from prefect.context import SettingsContext, get_settings_context
    from prefect.settings import Settings

    saved = dict(os.environ)
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s - %(message)s"))
    prefect_logger = logging.getLogger("prefect")
    level = prefect_logger.level
    os.environ.clear()
    os.environ.update(env)
    try:
        settings = SettingsContext(profile=get_settings_context().profile, settings=Settings())
        prefect_logger.addHandler(handler)
        prefect_logger.setLevel(env.get("PREFECT_LOGGING_LEVEL", "INFO"))
        with settings, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            yield
    finally:
        prefect_logger.removeHandler(handler)
        prefect_logger.setLevel(level)
        os.environ.clear()
        os.environ.update(saved)


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


def task_run_states(
    server: PrefectServer, flow_run_id: UUID, expected: dict[str, str] | int
) -> dict[str, str]:
    """``{task run name: state name}`` of the latest attempt of each task run. Task runs are
    recorded from events, so this polls (up to 30 s) until ``expected`` (the states, or how
    many) shows up, and returns what it found."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read(client: Any) -> dict[str, str]:
        runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
        latest: dict[str, Any] = {}
        for run in sorted(runs, key=lambda r: r.start_time or r.expected_start_time or r.created):
            if run.state is not None:
                latest[run.name] = run.state.name
                tags[run.name] = tuple(run.tags or ())
        return latest

    tags: dict[str, tuple[str, ...]] = {}

    names = list(expected) if isinstance(expected, dict) else []

    def done(found: dict[str, str]) -> bool:
        return found == expected if isinstance(expected, dict) else len(found) >= expected

    deadline = time.monotonic() + 30
    found = expand_restored(with_client(server, read), names, tags)
    while not done(found) and time.monotonic() < deadline:
        time.sleep(0.25)
        found = expand_restored(with_client(server, read), names, tags)
    return found


def expand_restored(
    found: dict[str, str], names: list[str], tags: dict[str, tuple[str, ...]]
) -> dict[str, str]:
    """Per task: a subtree restored from checkpoints is one task run named
    ``<where>: a, b (restored from checkpoints)`` (``every task`` for the whole tree, issue
    15); it stands for each task it names (``every task``: each of ``names``). A restore
    belongs to the latest attempt, so it wins over an earlier attempt's task run."""
    out: dict[str, str] = {}
    restored: dict[str, str] = {}
    for name, state in found.items():
        covered = restored_paths(tags.get(name, ()))  # as `folpipe status` reads its tags
        if covered is None:
            out[name] = state
            continue
        tasks = names if covered == [""] else covered
        restored.update({task: state for task in tasks})
    return {**out, **restored}


SCHEDULER_WAIT_S = 120.0
"""A new deployment's runs are created by the server's scheduler service, which may take a
loop (seconds on a busy machine) after the deployment exists."""


def keep_first_scheduled_run(server: PrefectServer, deployment: str) -> UUID:
    """Wait until the deployment's first scheduled run is due, pause the schedule and delete
    the other scheduled runs, so exactly one schedule firing reaches the worker."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    async def first_due(client: Any) -> UUID:
        found = await client.read_deployment_by_name(deployment)
        only = DeploymentFilter(id=DeploymentFilterId(any_=[found.id]))
        scheduled: list[Any] = []
        deadline = time.monotonic() + SCHEDULER_WAIT_S
        while not scheduled and time.monotonic() < deadline:  # the scheduler service's loop
            runs = await client.read_flow_runs(deployment_filter=only)
            scheduled = [r for r in runs if r.auto_scheduled]
            if not scheduled:
                await asyncio.sleep(0.5)
        assert scheduled, f"{deployment}: no scheduled run within {SCHEDULER_WAIT_S} s"
        first = min(scheduled, key=lambda r: r.expected_start_time)
        while first.expected_start_time.timestamp() > time.time():
            await asyncio.sleep(0.5)
        await client.pause_deployment(found.id)
        for run in await client.read_flow_runs(deployment_filter=only):
            if run.auto_scheduled and run.id != first.id and run.state.is_scheduled():
                await client.delete_flow_run(run.id)
        return first.id

    return with_client(server, first_due)


def retry_like_the_ui(server: PrefectServer, flow_run_id: UUID) -> None:
    """What the UI's Retry button does: the same flow run back to Scheduled (AwaitingRetry)."""
    from prefect.states import AwaitingRetry

    async def retry(client: Any) -> None:
        await client.set_flow_run_state(flow_run_id, AwaitingRetry(message="Retry"), force=True)

    with_client(server, retry)


def evidence(workflow: Path, flow_run_id: UUID) -> dict[str, Any]:
    """What the `write` task's post_run hook recorded for one flow run."""
    record = workflow / ".folpipe" / "evidence" / f"{flow_run_id}.json"
    return json.loads(record.read_text())["context"]
