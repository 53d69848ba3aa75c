"""Hand-written Prefect flows of the same shapes as the benchmark workflows (the baseline)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import INPUTS

REPORT_WRITERS = 4
"""Concurrent report writes in the flows doing folpipe's work (folpipe's writer uses as many):
1,000 leaves writing at once exhausted the API client's connection pool on a PostgreSQL
server (``httpx.PoolTimeout``)."""
_SLOTS: dict[int, asyncio.Semaphore] = {}


async def _report(markdown: str, key: str) -> None:
    """A markdown report written inline, at most REPORT_WRITERS at a time (per event loop)."""
    from prefect.artifacts import acreate_markdown_artifact

    slot = _SLOTS.setdefault(id(asyncio.get_running_loop()), asyncio.Semaphore(REPORT_WRITERS))
    async with slot:
        await acreate_markdown_artifact(markdown, key=key)


def _say_call(turn: int, tools: int) -> None:
    """The progress line folpipe logs after a model call (flows run with ``logged=True``)."""
    get_run_logger().info(
        "model call %d: %d in / %d out tokens, %d tool call(s)", turn, 1000 + turn, 12, tools
    )


def _say_tool(name: str, seconds: float) -> None:
    """The line folpipe logs after a tool call."""
    get_run_logger().info("tool %s ok in %.3fs", name, seconds)


@task
async def model_call(name: str, latency: float) -> str:
    """Stands in for one model call: waits like the scripted provider does."""
    await asyncio.sleep(latency)
    return f"{name}: ok"


@flow
async def parallel_leaves(count: int = 50, latency: float = 1.0) -> list[str]:
    return await asyncio.gather(*[model_call(f"leaf_{i}", latency) for i in range(count)])


@flow
async def branch(index: int, latency: float) -> list[str]:
    first = await model_call(f"branch_{index}/first", latency)
    second = await model_call(f"branch_{index}/second", latency)
    return [first, second]


@flow
async def parallel_branches(branches: int = 20, latency: float = 1.0) -> list[list[str]]:
    """One subflow per branch, as a Prefect user would write it."""
    return await asyncio.gather(*[branch(i, latency) for i in range(branches)])


@flow
async def sequential_chain(count: int = 200) -> list[str]:
    results = []
    for i in range(count):
        results.append(await model_call(f"step_{i}", 0.0))
    return results


@flow
async def sequential_chain_checkpointed(count: int = 200, storage: str = "") -> list[str]:
    """The same chain with persisted, content-keyed results (what folpipe checkpoints cost)."""
    checkpointed = _checkpointed(model_call, storage)
    results = []
    for i in range(count):
        results.append(await checkpointed(f"step_{i}", 0.0))
    return results


@task
async def reported_call(name: str, latency: float, logged: bool = False) -> str:
    """``model_call`` plus the report a Prefect user writes for it: a markdown artifact
    (``logged``: and the line folpipe logs for the call)."""
    await asyncio.sleep(latency)
    if logged:
        _say_call(1, 0)
    await _report(f"# {name}\n\nok", key=name.replace("_", "-"))
    return f"{name}: ok"


def _checkpointed(fn: Any, storage: str) -> Any:
    return fn.with_options(
        result_storage=Path(storage),
        cache_key_fn=lambda _ctx, params: f"{params['name']}-{uuid.uuid4().hex}",
    )


@flow
async def parallel_leaves_same_work(count: int = 50, latency: float = 1.0, storage: str = ""):
    """(1) doing what folpipe does per task: a persisted checkpoint and a markdown report."""
    call = _checkpointed(reported_call, storage)
    return await asyncio.gather(*[call(f"leaf_{i}", latency) for i in range(count)])


@flow
async def sequential_chain_same_work(count: int = 200, storage: str = "") -> list[str]:
    """(3) doing what folpipe does per task: a persisted checkpoint and a markdown report."""
    call = _checkpointed(reported_call, storage)
    return [await call(f"step_{i}", 0.0) for i in range(count)]


def probe(query: str, limit: int = 3) -> dict:
    """The tool every leaf of the wide tree calls (``trees.python_tool``'s body)."""
    return {"query": query, "hits": list(range(limit))}


@task
async def tool_leaf(name: str, latency: float, logged: bool = False) -> str:
    """A leaf of the wide tree doing folpipe's work: a model call asking for the tool, the
    tool call, a second model call answering, and its markdown report (``logged``: and the
    three progress lines folpipe logs for them, one log entry each, as a Prefect user writes
    them; folpipe sends a quick task's lines as one entry)."""
    await asyncio.sleep(latency)
    if logged:
        _say_call(1, 1)
    started = time.perf_counter()
    result = await asyncio.to_thread(probe, "prefect")
    if logged:
        _say_tool("probe", time.perf_counter() - started)
    await asyncio.sleep(latency)
    if logged:
        _say_call(2, 0)
    report = f"# {name}\n\n## Tool calls\n\nprobe: {result}\n\n## Output\n\ndone"
    await _report(report, key=name.replace("_", "-").replace("/", "-"))
    return f"{name}: done"


@task
async def bare_leaf(name: str, latency: float) -> str:
    """The same leaf without its report."""
    await asyncio.sleep(latency)
    await asyncio.to_thread(probe, "prefect")
    await asyncio.sleep(latency)
    return f"{name}: done"


@task
async def branch_task(
    index: int, leaves: int, latency: float, storage: str, logged: bool = False
) -> list[str]:
    """A branch as a parent task run with its leaves nested in it (as folpipe maps one)."""
    if not storage:
        return await asyncio.gather(*[bare_leaf(f"b{index}/q{i}", latency) for i in range(leaves)])
    leaf = _checkpointed(tool_leaf, storage)
    return await asyncio.gather(*[leaf(f"b{index}/q{i}", latency, logged) for i in range(leaves)])


@flow
async def wide_tree_same_work(
    branches: int = 10,
    leaves: int = 99,
    latency: float = 0.0,
    storage: str = "",
    logged: bool = False,
) -> list[list[str]]:
    """Issue 15 point 3: ``branches`` parallel branches (parent task runs) of ``leaves``
    parallel leaves, each calling its tool, persisting its result and writing its report
    (``storage=""``: bare, nothing persisted or reported; ``logged``: each leaf also logs
    folpipe's progress lines)."""
    return await asyncio.gather(
        *[branch_task(b, leaves, latency, storage, logged) for b in range(branches)]
    )


@flow
async def wide_group_same_work(
    count: int = 500, latency: float = 0.0, storage: str = "", logged: bool = False
):
    """Issue 15 point 3: one parallel group of ``count`` leaves doing folpipe's work
    (``storage=""``: bare; ``logged``: each leaf also logs folpipe's progress line)."""
    if not storage:
        return await asyncio.gather(*[model_call(f"item_{i}", latency) for i in range(count)])
    call = _checkpointed(reported_call, storage)
    return await asyncio.gather(*[call(f"item_{i}", latency, logged) for i in range(count)])


@task(persist_result=True, cache_policy=INPUTS)
async def llm_call(messages: list[dict[str, Any]], answer: str, turn: int) -> dict[str, Any]:
    """(6) one model call as its own Prefect task (the per-call durability of pydantic-ai's
    Prefect integration): keyed on its inputs (the conversation so far), result persisted."""
    return {"text": answer, "tool_calls": [{"id": f"c{turn}", "name": "fetch_page", "n": turn}]}


@flow
async def long_conversation(calls: int = 100, storage: str = "") -> int:
    """(6) the same conversation as folpipe's scenario 6, one persisted task per model call."""
    call = llm_call.with_options(result_storage=Path(storage))
    answer = ("thinking about the pages so far " * 100)[:3000]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every page."}]
    for turn in range(calls):
        response = await call(messages, answer, turn)
        page = (f"page {turn}: " + "lorem ipsum dolor sit amet " * 200)[:5000]
        messages = [*messages, {"role": "assistant", **response}, {"role": "tool", "content": page}]
    return len(messages)


@flow
async def one_task() -> str:
    return await model_call("one", 0.0)


if __name__ == "__main__":  # the cold-start baseline: one bare flow run in a new process
    asyncio.run(one_task())
