"""The one leaf, without running it: its Prefect options, and that it pickles for Dask."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import cloudpickle
from prefect.states import Failed

from prefect_folpipe.compile.checkpoints._files import CheckpointStorage
from prefect_folpipe.compile.leaf import (
    CheckpointKey,
    LeafRef,
    ProcessLocal,
    RetryCondition,
    leaf_task,
    task_options,
)
from prefect_folpipe.compile.shared import RunSpec
from prefect_folpipe.errors import OutputValidationError, ProviderError
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.plan._scope import CheckpointScope
from prefect_folpipe.plan.contextops import ContextBox
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow


def _workflow(**settings: Any) -> Workflow:
    leaf = Task(
        name="review",
        path="review",
        folder=Path("/wf/subtasks/review"),
        config=TaskConfig(),
        settings=EffectiveSettings(**settings),
        instructions="Review.",
    )
    root = Task(
        name="wf",
        path="",
        folder=Path("/wf"),
        config=TaskConfig(),
        settings=EffectiveSettings(),
        children=(leaf,),
    )
    return Workflow(root=root, root_dir=Path("/wf"), name="wf")


def _options(workflow: Workflow, *, fresh: bool = False) -> dict[str, Any]:
    plan = build_plan(workflow)
    scope = CheckpointScope(lineage="flow-run-1", fresh=fresh)
    ref = LeafRef(RunSpec("run-1", "/wf", checkpoints=scope), "review", "single")
    return task_options(
        plan.task("review"),
        plan.node("review"),
        ref,
        ProcessLocal(object()),
        tags=["folpipe"],
        storage=Path("/wf/.folpipe/results"),
    )


def test_one_place_for_retries_timeout_and_checkpoints() -> None:
    workflow = _workflow(max_retries=2, retry_delay_seconds=1.5, timeout=30, cache_expiration=60)
    options = _options(workflow)
    assert options["retries"] == 2
    assert options["retry_delay_seconds"] == [1.5, 3.0]
    assert options["timeout_seconds"] == 30
    assert isinstance(options["retry_condition_fn"], RetryCondition)
    assert isinstance(options["cache_key_fn"], CheckpointKey)
    assert options["persist_result"] is True and "refresh_cache" not in options
    storage = options["result_storage"]  # the checkpoint folder, its records checked on read
    assert isinstance(storage, CheckpointStorage) and storage.basepath == "/wf/.folpipe/results"
    assert options["result_serializer"].type == "json"
    assert options["result_serializer"].object_decoder is None
    assert options["cache_expiration"].total_seconds() == 60
    # --fresh: a new lineage (its own keys, which never age), not Prefect's refresh_cache,
    # so a retry or resume of the fresh run still reuses what it finished
    fresh = _options(workflow, fresh=True)
    assert "refresh_cache" not in fresh and "cache_expiration" not in fresh
    off = _options(_workflow(cache=False, timeout=-1))
    assert off["persist_result"] is False and "cache_key_fn" not in off
    assert off["timeout_seconds"] is None


def test_equal_retry_delays_reach_prefect_as_one_number() -> None:
    """The Prefect UI's task-run page shows "Retry Delay NaNs" for a list of delays."""
    one_retry = _options(_workflow(max_retries=1, retry_delay_seconds=5))
    assert one_retry["retry_delay_seconds"] == 5.0
    equal = _options(_workflow(max_retries=3, retry_delay_seconds=(30.0, 30.0)))
    assert equal["retry_delay_seconds"] == 30.0
    single = _options(_workflow(max_retries=3, retry_delay_seconds=(7.0,)))
    assert single["retry_delay_seconds"] == 7.0
    assert _options(_workflow(max_retries=0))["retry_delay_seconds"] == 0
    growing = _options(_workflow(max_retries=3, retry_delay_seconds=(5.0, 60.0)))
    assert growing["retry_delay_seconds"] == [5.0, 60.0, 60.0]  # only a list says this


def test_the_retry_condition_never_retries_author_errors() -> None:
    condition = RetryCondition(None)
    assert condition(None, None, Failed(data=ProviderError("busy", kind="server_error")))
    assert not condition(None, None, Failed(data=OutputValidationError("bad output")))
    assert not condition(None, None, Failed(data=ProviderError("no", kind="auth")))
    only_timeouts = RetryCondition(("TimeoutError",))
    assert not only_timeouts(None, None, Failed(data=ProviderError("busy", kind="server_error")))


def test_the_leaf_pickles_and_leaves_the_live_runtime_behind() -> None:
    live = ProcessLocal(object())
    assert pickle.loads(pickle.dumps(live)).value is None
    assert ProcessLocal.__copy__(live) is live
    options = _options(_workflow(max_retries=1))
    ref = LeafRef(RunSpec("run-1", "/wf"), "review", "single", ("folpipe",))
    leaf = leaf_task(ref, live, options)
    clone = cloudpickle.loads(cloudpickle.dumps(leaf))
    assert clone.fn.args[0] == ref
    assert clone.fn.args[1].value is None  # rebuilt from the spec where it lands
    assert clone.retries == 1 and clone.task_key == leaf.task_key
    assert isinstance(clone.result_storage, CheckpointStorage)
    box = cloudpickle.loads(cloudpickle.dumps(ContextBox({"a": 1})))
    assert box.value == {"a": 1}
