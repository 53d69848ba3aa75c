"""Scale-out on Dask: the same leaf, submitted to Prefect's ``DaskTaskRunner``.

Passes of tasks with ``settings.task_runner: dask`` run in Dask worker processes. Everything
that must be one per run lives in one place, a Dask actor (``ServicesActor``) started with the
run: the provider pool (so the scripted reply cursor, a replay cassette, a recording, a
client's connections behave as in one process), the call guard (``settings.rate_limit`` holds
across every worker) and the budget ledger (every call is checked against and charged to the
run's one ledger, failed attempts included). A pass in a worker rebuilds the rest from its
``RunSpec`` (the workflow, loaded once per process and run) and reaches the actor through thin
proxies; passes left in the flow's process use the same proxies, so a run has one ledger.

Every worker talks to the Prefect API, so a real server is required (FP640): in ephemeral mode
each worker would start a temporary server of its own.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .._messages import ModelRequest, ModelResponse, Usage
from ..agent import run_task
from ..errors import ConfigError
from ..plan import DaskPlan
from ..plan.execution import Outcome
from ..workflow.tree import Task, Workflow
from .passes import PassRuntime, Payload
from .report import RunTracker, artifacts
from .shared import ModelServices, RunSpec, provider_salt

DEFAULT_LOCAL_WORKERS = 4
_WAITS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="folpipe-dask-wait")
"""Threads that wait on Dask futures, so the event loop never blocks on one."""


def require_server() -> str:
    """The Prefect API URL; FP640 when none is configured (Dask needs a real server)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise ConfigError(
            "settings.task_runner 'dask' needs a Prefect server: without PREFECT_API_URL every "
            "Dask worker would start a temporary server of its own",
            code="FP640",
            hint="run `prefect server start` and export PREFECT_API_URL, or drop task_runner",
        )
    return url


def local_cluster_kwargs(workers: int | None) -> dict[str, Any]:
    """A local ``distributed.LocalCluster``: one single-threaded process per parallel slot."""
    return {
        "n_workers": workers or min(DEFAULT_LOCAL_WORKERS, os.cpu_count() or 1),
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }


def dask_task_runner(plan: DaskPlan) -> Any:
    """A ``prefect_dask.DaskTaskRunner``: the plan's ``dask_address``, or a local cluster."""
    if plan.problem:
        raise ConfigError(plan.problem, code="FP400", hint="give every task the same dask_address")
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ConfigError(
            "settings.task_runner is 'dask' but prefect-dask is not installed",
            code="FP607",
            hint="pip install 'prefect-folpipe[dask]'",
        ) from None
    require_server()
    address = scheduler_address(plan)
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(plan.workers))


ADDRESS_ENV = "FOLPIPE_DASK_ADDRESS"
"""A scheduler address for every run in this environment (e.g. a deployment's job variable):
it wins over ``settings.dask_address``, so one folder runs on a local cluster in development
and on the shared cluster when deployed."""


def scheduler_address(plan: DaskPlan) -> str | None:
    """``$FOLPIPE_DASK_ADDRESS``, else the plan's ``dask_address`` (``None``: a local cluster);
    FP608 for an environment value that is not a scheduler address."""
    from ..validate.deploy_rules import is_scheduler_address

    given = os.environ.get(ADDRESS_ENV, "").strip()
    if not given:
        return plan.address
    if not is_scheduler_address(given):
        raise ConfigError(
            f"{ADDRESS_ENV}={given!r} is not a scheduler address",
            code="FP608",
            hint="e.g. tcp://10.0.0.5:8786 (set it, or unset it for settings.dask_address)",
        )
    return given


# --------------------------------------------------------------------------- the services actor


class ServicesActor:
    """The run's ``ModelServices``, in one Dask worker; every pass's model calls come here."""

    def __init__(self, spec: RunSpec) -> None:
        workflow = load(spec)
        self.services = ModelServices(workflow, spec)
        self.tasks = {task.path: task for task in workflow.tasks()}
        self.attempts: Counter[str] = Counter()

    async def complete(self, path: str, request: ModelRequest) -> ModelResponse:
        return await self.services.provider_for(self.tasks[path]).complete(request)

    async def before_call(self, path: str) -> None:
        self.services.ledger.before_call(self.tasks[path])

    async def after_call(self, path: str, usage: Usage, model: str | None) -> float:
        return self.services.ledger.after_call(self.tasks[path], usage, model=model)

    async def replayed(self, path: str, usage: Usage, model: str | None) -> float:
        return self.services.ledger.replayed(self.tasks[path], usage, model=model)

    async def usage(self) -> dict[str, Any]:
        return await self.services.usage()

    async def failed_call(self, path: str) -> None:
        self.services.ledger.failed_call(self.tasks[path])

    async def attempt(self, path: str) -> None:
        self.attempts[path] += 1

    async def take_attempts(self, path: str) -> int:
        return self.attempts.pop(path, 0)

    async def report(self) -> dict[str, dict[str, Any]]:
        return await self.services.report()

    async def aclose(self) -> None:
        await self.services.aclose()


async def call(actor_future: Any) -> Any:
    """The result of an actor call, awaited without blocking the event loop."""
    return await asyncio.get_running_loop().run_in_executor(_WAITS, actor_future.result)


class ActorProvider:
    """A provider whose calls go to the services actor (same pool, guard and cursor)."""

    supports_tools = True

    def __init__(self, actor: Any, path: str, name: str) -> None:
        self.actor = actor
        self.path = path
        self.name = name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await call(self.actor.complete(self.path, request))  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        return None


class ActorLedger:
    """The run's budget ledger, in the services actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def before_call(self, task: Task) -> None:
        await call(self.actor.before_call(task.path))

    async def after_call(self, task: Task, usage: Usage, *, model: str | None = None) -> float:
        return await call(self.actor.after_call(task.path, usage, model))  # type: ignore[no-any-return]

    async def replayed(self, task: Task, usage: Usage, *, model: str | None = None) -> float:
        return await call(self.actor.replayed(task.path, usage, model))  # type: ignore[no-any-return]

    async def failed_call(self, task: Task) -> None:
        """A model call that raised: one call, no tokens (issue 11 point 5)."""
        await call(self.actor.failed_call(task.path))


class ActorServices:
    """``runtime.Services`` through the services actor (in a worker or the flow's process)."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.actor = spec.services
        self.ledger = ActorLedger(self.actor)

    def provider_for(self, task: Task) -> ActorProvider:
        return ActorProvider(self.actor, task.path, provider_salt(task, self.spec.override))

    async def report(self) -> dict[str, dict[str, Any]]:
        return await call(self.actor.report())  # type: ignore[no-any-return]

    async def usage(self) -> dict[str, Any]:
        return await call(self.actor.usage())  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await call(self.actor.aclose())


# --------------------------------------------------------------------------- worker side

_LOADED: OrderedDict[str, Workflow] = OrderedDict()
_RUNTIMES: OrderedDict[str, RemoteRuntime] = OrderedDict()
KEEP_RUNS = 4


def load(spec: RunSpec) -> Workflow:
    """The run's workflow, loaded once per process (the last few runs are kept)."""
    from ..validate import load_workflow

    found = _LOADED.get(spec.key)
    if found is None:
        found = _LOADED[spec.key] = load_workflow(Path(spec.root_dir))
        while len(_LOADED) > KEEP_RUNS:
            _LOADED.popitem(last=False)
    return found


class RemoteRuntime(PassRuntime):
    """Passes in a Dask worker: services through the actor, artifacts written at once, attempts
    counted in the actor for the flow's report."""

    async def attempt(self, task: Task, number: int) -> None:
        await call(self.spec.services.attempt(task.path))

    async def publish(
        self, task: Task, phase: str, label: str, outcome: Any, payload: Payload
    ) -> None:
        await artifacts.write_task_artifact(
            self.workflow.name, task, phase, label, outcome, payload
        )

    async def publish_failure(
        self, task: Task, phase: str, label: str, error: BaseException, attempt: int
    ) -> None:
        await artifacts.write_failure_artifact(
            self.workflow.name, task, phase, label, error, attempt
        )


def remote_runtime(spec: RunSpec) -> RemoteRuntime:
    """The runtime of a run's passes in this (worker) process, rebuilt from its spec once."""
    found = _RUNTIMES.get(spec.key)
    if found is None:
        found = _RUNTIMES[spec.key] = RemoteRuntime(load(spec), spec, ActorServices(spec), run_task)
        while len(_RUNTIMES) > KEEP_RUNS:
            _RUNTIMES.popitem(last=False)
    return found


# --------------------------------------------------------------------------- flow side


class DaskRunner:
    """Submits passes to the run's ``DaskTaskRunner`` and hosts its services actor."""

    def __init__(self, plan: DaskPlan) -> None:
        self.plan = plan
        self.task_runner: Any = None
        self._actor_future: Any = None
        self._actor: Any = None

    def check(self) -> None:
        dask_task_runner(self.plan)

    async def start(self, spec: RunSpec) -> RunSpec:
        """Start the cluster (or connect) and the services actor; the spec carries it."""
        self.task_runner = dask_task_runner(self.plan)
        self._actor_future, self._actor = await asyncio.to_thread(self._start, spec)
        return spec.with_services(self._actor)

    def _start(self, spec: RunSpec) -> tuple[Any, Any]:
        self.task_runner.__enter__()
        client = self.task_runner.client
        future = client.submit(ServicesActor, spec, actor=True)
        with client.as_current():  # the handle talks to the actor through this client
            return future, future.result()

    async def run(self, leaf: Any, parameters: Mapping[str, Any], wait_for: Sequence[Any]) -> Any:
        future = self.task_runner.submit(leaf, dict(parameters), wait_for=list(wait_for) or None)
        try:
            await _done(future.wrapped_future)
        except asyncio.CancelledError:
            future.wrapped_future.cancel()
            raise
        try:  # the final state travels back with the result (the API may lag behind)
            return future.wrapped_future.result()
        except Exception as exc:  # the submission itself failed (e.g. a worker died)
            from prefect.states import Failed

            return Failed(message=f"{type(exc).__name__}: {exc}", data=exc)

    async def report(self, task: Task, state: Any, outcome: Outcome, tracker: RunTracker) -> None:
        for number in range(1, await call(self._actor.take_attempts(task.path)) + 1):
            tracker.attempt(task.path, number)
        if outcome.status == "completed":
            tracker.charge(task.path, await state.aresult())

    async def aclose(self) -> None:
        if self.task_runner is None:
            return
        try:
            if self._actor is not None:
                await call(self._actor.aclose())
        finally:
            self._actor = self._actor_future = None
            await asyncio.to_thread(self.task_runner.__exit__, None, None, None)
            self.task_runner = None


async def _done(future: Any) -> None:
    """Wait for a ``distributed.Future`` without a thread: its callback wakes the loop."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def wake(_: Any) -> None:
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

    future.add_done_callback(wake)
    await done
