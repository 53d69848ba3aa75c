"""Prefect-free parts of the translator: cache keys, retry decisions, merges, strategies."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.compile.retry import retry_delays, should_retry
from prefect_folpipe.errors import OutputValidationError, ProviderError
from prefect_folpipe.plan._keys import cache_key, task_identity
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.plan.contextops import merge_delta, seed_context
from prefect_folpipe.plan.execution import run_group as run_plan_group
from prefect_folpipe.plan.execution._outcome import Outcome, Scope
from prefect_folpipe.plan.failures import DependencyError
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow


def _task(name: str, path: str | None = None, children: Sequence[Task] = (), **config: Any) -> Task:
    return Task(
        name=name,
        path=name if path is None else path,
        folder=Path("/wf") / name,
        config=TaskConfig(**config),
        settings=EffectiveSettings(),
        instructions=f"Do {name}.",
        children=tuple(children),
        content_hash=f"hash-{name}",
    )


def test_cache_key_tracks_what_the_task_sees() -> None:
    task = _task("review")
    ident = task_identity(task)
    base = cache_key(task, ident, {"draft": "a"})
    assert base == cache_key(task, ident, {"draft": "a", "_env": {"cwd": "/elsewhere"}})
    assert base != cache_key(task, ident, {"draft": "b"})
    assert base != cache_key(task, ident, {"draft": "a"}, iteration=(2,))
    assert base != cache_key(task, ident, {"draft": "a"}, phase="final")
    assert base != cache_key(task, ident, {"draft": "a"}, salt="anthropic")
    assert base.startswith("review-")
    other = _task("other")
    assert base != cache_key(other, task_identity(other), {"draft": "a"})


def test_cache_key_uses_only_declared_inputs() -> None:
    task = _task("scoped", input={"required": ["draft"]})
    ident = task_identity(task)
    assert cache_key(task, ident, {"draft": "a", "noise": 1}) == cache_key(
        task, ident, {"draft": "a", "noise": 2}
    )


def test_retry_decisions() -> None:
    assert should_retry(ProviderError("x", kind="rate_limit"), None)
    assert not should_retry(ProviderError("x", kind="auth"), None)
    assert not should_retry(OutputValidationError("bad"), None)
    assert should_retry(TimeoutError(), ["TimeoutError"])
    assert not should_retry(ConnectionError(), ["TimeoutError"])
    assert should_retry(ProviderError("x", kind="rate_limit"), ["rate_limit"])
    settings = EffectiveSettings(max_retries=3, retry_delay_seconds=0.5)
    assert retry_delays(settings) == [0.5, 1.0, 2.0]
    assert retry_delays(EffectiveSettings(max_retries=2, retry_delay_seconds=(1.0,))) == [1.0, 1.0]


def test_merge_appends_errors_and_never_merges_env() -> None:
    context: dict[str, Any] = {"_errors": [{"task": "a"}], "x": 1}
    merge_delta(context, {"_errors": [{"task": "b"}], "_env": {"cwd": "/"}, "x": 2})
    assert context == {"_errors": [{"task": "a"}, {"task": "b"}], "x": 2}


def test_seed_context_overlays_the_argument_on_the_root_context() -> None:
    root = _task("root", path="", context={"a": 1, "b": 1})
    workflow = Workflow(root=root, root_dir=Path("/wf"), name="wf")
    assert seed_context(workflow, {"b": 2, "_env": {}}) == {"a": 1, "b": 2}


def run_group(group: Task, context: dict[str, Any], ex: Any, scope: Scope) -> Any:
    """Run ``group``'s children as its plan says (the group is the root of a workflow)."""
    plan = build_plan(Workflow(root=group, root_dir=Path("/wf"), name=group.name))
    return run_plan_group(plan, plan.task(group.path), context, ex, scope)


class FakeExecutor:
    """Runs children instantly from a table of outcomes; records what happened."""

    def __init__(self, outcomes: dict[str, tuple[str, float]]) -> None:
        self.outcomes = outcomes
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.skipped: dict[str, str] = {}
        self.seen: dict[str, dict[str, Any]] = {}

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> Outcome:
        self.started.append(child.name)
        self.seen[child.name] = dict(context)
        status, delay = self.outcomes.get(child.name, ("completed", 0.0))
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self.cancelled.append(child.name)
            raise
        if status == "failed":
            return Outcome("failed", error=RuntimeError(f"{child.name} broke"))
        return Outcome("completed", {child.name: "done", "last": child.name})

    def not_run(self, child: Task, reason: str) -> None:
        self.skipped[child.name] = reason

    def warn(self, message: str) -> None:
        pass

    def iteration_started(self, group: Task, number: int) -> None:
        pass


async def test_parallel_merges_in_sibling_order_and_fail_fast_cancels() -> None:
    kids = [_task("a"), _task("b"), _task("c")]
    group = _task("g", children=kids)
    ex = FakeExecutor({"a": ("completed", 0.05), "b": ("completed", 0.0)})
    result = await run_group(group, {}, ex, Scope())
    assert result.status == "completed" and result.delta["last"] == "c"

    ex = FakeExecutor({"a": ("failed", 0.0), "b": ("completed", 5.0)})
    result = await run_group(group, {}, ex, Scope())
    assert result.status == "failed" and "a broke" in str(result.error)
    assert "b" in ex.cancelled


async def test_sequential_stops_and_names_the_failure() -> None:
    kids = [_task("a"), _task("b"), _task("c")]
    group = _task("g", children=kids, subtasks={"execution_type": "sequential"})
    ex = FakeExecutor({"b": ("failed", 0.0)})
    result = await run_group(group, {}, ex, Scope())
    assert result.status == "failed"
    assert ex.started == ["a", "b"] and ex.skipped == {"c": "not run: 'b' failed"}
    assert ex.seen["b"]["a"] == "done"  # sequential passes context forward


async def test_graph_rejects_cycles_and_unknown_upstreams() -> None:
    a = _task("a", depends_on=["b"])
    b = _task("b", depends_on=["a"])
    group = _task("g", children=[a, b], subtasks={"execution_type": "graph"})
    with pytest.raises(DependencyError, match="cycle"):
        await run_group(group, {}, FakeExecutor({}), Scope())
    lonely = _task("x", depends_on=["ghost"])
    group = _task("g", children=[lonely], subtasks={"execution_type": "graph"})
    with pytest.raises(DependencyError, match="ghost"):
        await run_group(group, {}, FakeExecutor({}), Scope())


def test_scope_labels_loop_iterations() -> None:
    assert Scope().label("a/b") == "a/b"
    assert Scope().enter(2).label("a/b") == "a/b[2]"
    assert Scope().label("") == "root"


async def test_a_group_that_cannot_start_a_member_leaves_no_coroutine_unawaited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the task group refuses a member (e.g. a RecursionError deep in a tree), the members
    not started are closed, not left for the garbage collector to warn about."""
    import gc
    import warnings

    from prefect_folpipe.plan.execution import _fanout as fanout

    started: list[int] = []
    real = asyncio.TaskGroup.create_task

    def refuse_second(self: asyncio.TaskGroup, coro: Any, **kwargs: Any) -> Any:
        if started:
            raise RecursionError("too deep")
        started.append(1)
        return real(self, coro, **kwargs)

    async def member() -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr(asyncio.TaskGroup, "create_task", refuse_second)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(BaseExceptionGroup) as refused:
            await fanout.gather_fail_fast([member(), member(), member()])
        assert refused.group_contains(RecursionError)
        del refused  # its traceback holds the coroutines
        gc.collect()
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []


def test_an_inputs_digest_is_its_canonical_json_whatever_was_digested_before() -> None:
    """Scalar inputs' digests are remembered; equal values of other types (``True == 1 ==
    1.0``) keep digests of their own, and a dict is digested afresh (it may be a new one)."""
    from prefect_folpipe.plan._manifest import _digest, _input_digest
    from prefect_folpipe.plan.contextops import canonical_json

    values = [True, 1, 1.0, "1", None, "x" * 5000, {"a": [1, 2]}, [True]]
    for _ in range(2):
        assert [_input_digest(v) for v in values] == [_digest(canonical_json(v)) for v in values]
    assert len({_input_digest(v) for v in (True, 1, 1.0)}) == 3


@pytest.mark.parametrize("content", [b'{"version": 3, "parts"', b"[1, 2]", b"[" * 2000])
def test_a_damaged_manifest_is_missing_and_said_once(tmp_path, caplog, content) -> None:
    """Truncated, not an object, nested too deeply: ``None``, one FP527 warning naming it."""
    from prefect_folpipe.plan._manifest import manifest_file, read_manifest

    file = manifest_file(tmp_path, "draft", "single")
    file.write_bytes(content)
    with caplog.at_level("WARNING", logger="prefect_folpipe.plan"):
        assert read_manifest(tmp_path, "draft", "single") is None
        assert read_manifest(tmp_path, "draft", "single") is None
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "[FP527]" in warning and file.name in warning and "treated as missing" in warning
    assert read_manifest(tmp_path, "other", "single") is None  # absent: nothing to say
    assert len(caplog.records) == 1
