"""Hand-written Prefect flows of the benchmark shapes, as a Prefect user would write them.

Each shape has a **bare** flow (one ``@task`` per model call, nothing persisted, no reports) and a
**same work** flow doing what folpipe does per task: its result persisted under a key of its
own (a checkpoint) and a markdown report written inside the task. A model call is a sleep of
the scripted provider's latency. ``python -m benchmarks.handwritten`` runs the one-task flow
(the bare baseline of a new ``folpipe run`` process).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from prefect import flow, task

REPORT_WRITERS = 4
"""Reports written at once (folpipe's report writer runs as many; 1,000 at once exhausted the
API client's connection pool on a PostgreSQL server)."""
_SLOTS: dict[int, asyncio.Semaphore] = {}


async def _report(markdown: str, key: str) -> None:
    """A markdown report, at most REPORT_WRITERS at a time (per event loop)."""
    from prefect.artifacts import acreate_markdown_artifact

    slot = _SLOTS.setdefault(id(asyncio.get_running_loop()), asyncio.Semaphore(REPORT_WRITERS))
    async with slot:
        await acreate_markdown_artifact(markdown, key=key.replace("_", "-").replace("/", "-"))


def _persisted(fn: Any, storage: str) -> Any:
    """``fn`` with its result persisted in ``storage`` under a key of its own."""
    return fn.with_options(
        result_storage=Path(storage),
        cache_key_fn=lambda _ctx, params: f"{params['name']}-{uuid.uuid4().hex}",
    )


def probe(query: str, limit: int = 3) -> dict[str, Any]:
    """The tool every leaf of the wide tree calls (``trees.python_tool``'s body)."""
    return {"query": query, "hits": list(range(limit))}


@task
async def model_call(name: str, latency: float) -> str:
    """One model call."""
    await asyncio.sleep(latency)
    return f"{name}: ok"


@task
async def reported_call(name: str, latency: float) -> str:
    """One model call and its report."""
    await asyncio.sleep(latency)
    await _report(f"# {name}\n\nok", key=name)
    return f"{name}: ok"


@task
async def tool_leaf(name: str, latency: float, report: bool = True) -> str:
    """A wide-tree leaf: a model call asking for the tool, the tool, a model call answering,
    and (``report``) its report."""
    await asyncio.sleep(latency)
    result = await asyncio.to_thread(probe, "prefect")
    await asyncio.sleep(latency)
    if report:
        await _report(f"# {name}\n\n## Tool calls\n\nprobe: {result}\n\ndone", key=name)
    return f"{name}: done"


@flow
async def parallel_leaves(count: int, latency: float) -> list[str]:
    return await asyncio.gather(*[model_call(f"leaf_{i}", latency) for i in range(count)])


@flow
async def parallel_leaves_same_work(count: int, latency: float, storage: str) -> list[str]:
    call = _persisted(reported_call, storage)
    return await asyncio.gather(*[call(f"leaf_{i}", latency) for i in range(count)])


@flow
async def chain(count: int, latency: float) -> list[str]:
    return [await model_call(f"step_{i}", latency) for i in range(count)]


@flow
async def chain_same_work(count: int, latency: float, storage: str) -> list[str]:
    call = _persisted(reported_call, storage)
    return [await call(f"step_{i}", latency) for i in range(count)]


@flow
async def branch(index: int, latency: float) -> list[str]:
    """A branch as a Prefect user writes one: a subflow."""
    return [await model_call(f"b{index}/{step}", latency) for step in ("first", "second")]


@flow
async def branches(branches: int, latency: float) -> list[list[str]]:
    return await asyncio.gather(*[branch(i, latency) for i in range(branches)])


@task
async def branch_task(index: int, latency: float, storage: str) -> list[str]:
    """A branch as folpipe maps one: a parent task run with its leaves nested in it."""
    call = _persisted(reported_call, storage)
    return [await call(f"b{index}/{step}", latency) for step in ("first", "second")]


@flow
async def branches_same_work(branches: int, latency: float, storage: str) -> list[list[str]]:
    return await asyncio.gather(*[branch_task(i, latency, storage) for i in range(branches)])


@task
async def tree_branch(index: int, leaves: int, latency: float, storage: str) -> list[str]:
    """A wide-tree branch as a parent task run (``storage=""``: bare leaves, no reports)."""
    leaf = _persisted(tool_leaf, storage) if storage else tool_leaf
    names = [f"b{index}/q{i}" for i in range(leaves)]
    return await asyncio.gather(*[leaf(name, latency, bool(storage)) for name in names])


@flow
async def wide_tree(branches: int, leaves: int, latency: float) -> list[list[str]]:
    return await asyncio.gather(*[tree_branch(b, leaves, latency, "") for b in range(branches)])


@flow
async def wide_tree_same_work(
    branches: int, leaves: int, latency: float, storage: str
) -> list[list[str]]:
    runs = [tree_branch(b, leaves, latency, storage) for b in range(branches)]
    return await asyncio.gather(*runs)


@flow
async def wide_group(count: int, latency: float) -> list[str]:
    return await asyncio.gather(*[model_call(f"item_{i}", latency) for i in range(count)])


@flow
async def wide_group_same_work(count: int, latency: float, storage: str) -> list[str]:
    call = _persisted(reported_call, storage)
    return await asyncio.gather(*[call(f"item_{i}", latency) for i in range(count)])


@flow
async def one_task(latency: float = 0.0) -> str:
    return await model_call("one", latency)


if __name__ == "__main__":
    asyncio.run(one_task())
