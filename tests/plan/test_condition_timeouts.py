"""Conditions are evaluated inside the timeout that bounds them (issue 11 point 15, the loop
part): a slow ``until`` ends with its iteration's ``iteration_timeout``, a slow ``skip_if``
with its task's ``settings.timeout``, instead of blocking the event loop past them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from builders import make_task, workflow_around

from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.plan.execution import _loop as loops
from prefect_folpipe.plan.execution import run_group
from prefect_folpipe.plan.execution._outcome import Outcome, Scope
from prefect_folpipe.plan.execution._policy import ChildPolicy
from prefect_folpipe.plan.failures import IterationTimeout, TaskTimedOut
from prefect_folpipe.workflow.tree import Task

SLOW_S = 3.0


class SlowCondition:
    """A condition that takes ``SLOW_S`` to answer ``True`` (like a CPU-heavy expression)."""

    def evaluate(self, context: Mapping[str, Any]) -> bool:
        time.sleep(SLOW_S)
        return True


class Executor:
    """Children answer at once."""

    async def run_child(
        self, child: Task, context: dict[str, Any], scope: Scope, wait_for: Sequence[Any] = ()
    ) -> Outcome:
        return Outcome("completed", {child.name: "done"})

    def not_run(self, child: Task, reason: str) -> None: ...

    def warn(self, message: str) -> None: ...

    def iteration_started(self, group: Task, number: int) -> None: ...


def test_a_slow_until_ends_with_its_iteration_timeout(monkeypatch) -> None:
    monkeypatch.setattr(loops, "compile_condition", lambda _source: SlowCondition())
    step = make_task("step", "step")
    loop = make_task(
        "loop",
        "",
        instructions=None,
        children=[step],
        config={
            "subtasks": {
                "execution_type": "loop",
                "until": "context.step == 'done'",
                "max_iterations": 3,
                "iteration_timeout": 0.5,
            }
        },
    )
    plan = build_plan(workflow_around(loop))
    started = time.monotonic()
    outcome = asyncio.run(run_group(plan, loop, {}, Executor(), Scope()))
    assert time.monotonic() - started < SLOW_S  # the wait ended at the iteration's timeout
    assert outcome.status == "failed"  # was: "completed", after the slow answer
    assert isinstance(outcome.error, IterationTimeout)
    assert "iteration_timeout=0.5" in str(outcome.error)


def test_a_slow_skip_if_ends_with_the_tasks_timeout(monkeypatch) -> None:
    monkeypatch.setattr(
        "prefect_folpipe.plan.execution._policy.compile_condition", lambda _source: SlowCondition()
    )
    task = make_task("late", "late", config={"conditions": {"skip_if": "context.x"}})

    async def check() -> bool:
        return await ChildPolicy().should_skip(task, {}, timeout=0.3)

    started = time.monotonic()
    with pytest.raises(TaskTimedOut, match="skip_if"):
        asyncio.run(check())
    assert time.monotonic() - started < SLOW_S
