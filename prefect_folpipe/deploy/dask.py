"""Scale-out: Prefect's Dask task runner for ``settings.task_runner: dask``.

Only leaves submitted with ``.submit()`` / ``.map()`` run on Dask workers (directly awaited
tasks run in the flow's process), and every Dask worker process talks to the Prefect API, so a
real server is required: in ephemeral mode each worker would start a temporary server of its own.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..workflow.tree import EffectiveSettings, Task, Workflow

DEFAULT_LOCAL_WORKERS = 4


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


def local_cluster_kwargs(settings: EffectiveSettings) -> dict[str, Any]:
    """A local ``distributed.LocalCluster``: one single-threaded process per parallel slot."""
    workers = settings.parallel_workers or min(DEFAULT_LOCAL_WORKERS, os.cpu_count() or 1)
    return {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }


def dask_task_runner(settings: EffectiveSettings) -> Any:
    """A ``prefect_dask.DaskTaskRunner`` for the settings: ``dask_address`` or a local cluster."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ConfigError(
            "settings.task_runner is 'dask' but prefect-dask is not installed",
            code="FP607",
            hint="pip install 'prefect-folpipe[dask]'",
        ) from None
    require_server()
    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(settings))


def task_runner_for(settings: EffectiveSettings) -> Any | None:
    """The task runner a flow should use, or ``None`` for Prefect's default."""
    if settings.task_runner == "dask":
        return dask_task_runner(settings)
    return None


# --------------------------------------------------------------------------- Dask-ready leaves
#
# A leaf submitted to Dask runs in another process, so its body must not close over per-run
# objects (provider pool, tracker, event loop): ``run_leaf_remotely`` receives plain data
# (workflow folder, task path, context) and rebuilds what it needs in the worker process.
# ``dask_leaf_task(task, root_dir)`` gives it the task's retries, timeout, tags, run name and
# content-keyed checkpoint, so the compile executor can ``.submit`` it on the Dask runner.


@lru_cache(maxsize=16)
def _load(root_dir: str) -> Workflow:
    from ..validate import load_workflow

    return load_workflow(Path(root_dir))


async def run_leaf_remotely(
    root_dir: str,
    task_path: str,
    context: dict[str, Any],
    phase: str = "single",
    provider: str | None = None,
    replies: str | None = None,
) -> dict[str, Any]:
    """One agent pass of a leaf, from plain data only (picklable, runs in a Dask worker)."""
    from ..agent import run_task
    from ..providers.registry import ProviderOverride, ProviderPool, override_from_env

    workflow = _load(root_dir)
    task = workflow.find(task_path)
    override = ProviderOverride(provider, replies) if provider else override_from_env()
    pool = ProviderPool(workflow, override)
    try:
        chosen = pool.for_task(task) if task.runs_agent else None
        outcome = await run_task(task, workflow, context, provider=chosen, phase=phase)
    finally:
        await pool.aclose()
    return {
        "delta": dict(outcome.delta),
        "text": outcome.text,
        "model_calls": outcome.model_calls,
        "tool_calls": outcome.tool_calls,
        "worker_pid": os.getpid(),
    }


def dask_leaf_task(
    task: Task, root_dir: Path, *, provider: str | None = None, label: str | None = None
) -> Any:
    """The Prefect task running ``task`` through :func:`run_leaf_remotely` (submit it);
    ``label`` is the task-run name (default: the task path)."""
    from prefect import Task as PrefectTask

    from ..compile.cache import cache_key, task_identity

    identity = task_identity(task)
    salt = provider or (task.provider.type if task.provider else "")

    def key(_ctx: Any, params: dict[str, Any]) -> str:
        return cache_key(task, identity, params["context"], phase=params["phase"], salt=salt)

    settings = task.settings
    timeout = settings.timeout if settings.timeout and settings.timeout > 0 else None
    return PrefectTask(
        run_leaf_remotely,
        name=task.name,
        task_run_name=label or task.path,
        retries=settings.max_retries,
        timeout_seconds=timeout,
        tags=["folpipe", "dask", *settings.tags, *task.config.tags],
        cache_key_fn=key,
        result_storage=root_dir / ".folpipe" / "results",
        persist_result=True,
    )


async def run_on_dask(
    task: Task,
    root_dir: Path,
    context: dict[str, Any],
    *,
    phase: str = "single",
    provider: str | None = None,
    replies: str | None = None,
    label: str | None = None,
) -> Any:
    """Submit one agent pass of ``task`` to the flow's (Dask) task runner and await its final
    ``State``, without blocking the event loop: what an async executor calls instead of
    awaiting the leaf task directly (directly awaited tasks bypass the task runner)."""
    import asyncio

    leaf = dask_leaf_task(task, root_dir, provider=provider, label=label)
    future = leaf.submit(str(root_dir), task.path, context, phase, provider, replies)
    await asyncio.to_thread(future.wait)
    return future.state


def fan_out_flow(
    path: str | Path, *, provider: str | None = None, replies: str | None = None
) -> Any:
    """A flow running the root's child leaves in parallel on the Dask task runner.

    The scale-out demonstrator: a flat fan-out of CPU-heavy leaves (``settings.task_runner:
    dask`` in the root task.yaml; ``dask_address`` or a local cluster). Children merge into the
    context in sibling order, like ``parallel``. Branch children are not supported here (FP641).
    """
    from prefect import Flow, get_run_logger
    from prefect.futures import wait

    from ..compile.contextops import child_context, merge_delta, seed_context

    root_dir = Path(path).resolve()
    workflow = _load(str(root_dir))
    leaves = list(workflow.root.children)
    if any(child.children for child in leaves):
        raise ConfigError(
            "the Dask fan-out runs leaf children of the root only",
            code="FP641",
            hint="move nested groups out, or run the workflow with `folpipe run`",
        )
    runner = dask_task_runner(workflow.root.settings)

    def folpipe_fan_out(context: dict[str, Any] | None = None) -> dict[str, Any]:
        seeded = seed_context(workflow, context)
        futures = [
            dask_leaf_task(leaf, root_dir, provider=provider).submit(
                str(root_dir), leaf.path, child_context(seeded), "single", provider, replies
            )
            for leaf in leaves
        ]
        wait(futures)
        final = child_context(seeded)
        logger = get_run_logger()
        for leaf, future in zip(leaves, futures, strict=True):
            payload = future.result()
            logger.info("%s ran in Dask worker process %s", leaf.path, payload["worker_pid"])
            merge_delta(final, payload["delta"])
        return final

    from ..compile.build import flow_name

    return Flow(folpipe_fan_out, name=flow_name(workflow.name), task_runner=runner)
