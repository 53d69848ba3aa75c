"""Task-run tags without a concurrency-lease request per task run.

Prefect asks the API for a concurrency lease for every task run *created* with tags (one
request each: +20 ms per task run on SQLite, seconds for 50 parallel ones), whether or not a
limit exists. ``TagPlan`` reads the API's limits once per run: a task run none of whose tags
has a limit is created untagged and gets its tags as it starts (``tag_task_run``; Prefect
sends the task run with each state change and the API keeps its tags from the final state
on); a task run with a limited tag is created tagged, so Prefect's lease and the limit apply.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..providers.registry import ProviderOverride
from ..workflow.tree import Task, Workflow
from .shared import provider_and_model

LOG = logging.getLogger("prefect_folpipe.compile")
PAGE = 200
MAX_PAGES = 20


class TagPlan:
    """Which tags a task run is created with, and which it gets as it starts."""

    def __init__(self) -> None:
        self.limited: frozenset[str] | None = None
        """Tags with a concurrency limit (``None``: unknown, so every tag goes on at creation)."""
        self._late: dict[str, list[str]] = {}

    def at_creation(self, key: str, tags: list[str]) -> list[str]:
        """The creation tags of the task run ``key``; the rest wait for ``late(key)``."""
        if tags and self.limited is not None and not self.limited & set(tags):
            self._late[key] = tags
            return []
        return tags

    def late(self, key: str) -> list[str]:
        return self._late.get(key, [])

    def unlimited(self, tags: Sequence[str]) -> bool:
        """None of ``tags`` has a concurrency limit (known): they can go on as the run starts."""
        return self.limited is not None and not self.limited & set(tags)


def tag_task_run(run_context: Any, tags: Sequence[str]) -> None:
    """Give the running task run (of a ``TaskRunContext``) its tags."""
    task_run = getattr(run_context, "task_run", None)
    if tags and task_run is not None and not set(tags) <= set(task_run.tags):
        task_run.tags = list(dict.fromkeys([*task_run.tags, *tags]))


async def limited_tags() -> frozenset[str] | None:
    """Tags with a concurrency limit on the API (``None`` when they cannot all be read)."""
    from prefect.client.orchestration import get_client

    names: set[str] = set()
    try:
        async with get_client() as client:
            for page in range(MAX_PAGES):
                limits = await client.read_global_concurrency_limits(limit=PAGE, offset=page * PAGE)
                names.update(limit.name for limit in limits)
                if len(limits) < PAGE:
                    break
            else:
                return None  # more limits than we page through: keep Prefect's leases
    except Exception as exc:
        LOG.debug("concurrency limits not read (task runs tagged at creation): %s", exc)
        return None
    return frozenset(name.removeprefix("tag:") for name in names if name.startswith("tag:"))


class RunTags:
    """The tags of a run's flow run and task runs, and when they go on."""

    def __init__(
        self, workflow: Workflow, override: ProviderOverride | None, *, task_tags: bool
    ) -> None:
        self.workflow = workflow
        self.override = override
        self.task_tags = task_tags
        self.plan = TagPlan()

    def of(self, task: Task | None = None) -> list[str]:
        """``folpipe``, ``workflow:<name>``, ``provider:<p>``, ``model:<m>`` + settings tags
        (``task=None``: the flow run's, with every provider and model the workflow uses)."""
        tags = ["folpipe", f"workflow:{self.workflow.name}"]
        if task is None:
            for node in self.workflow.tasks():
                tags += [t for t in self.of(node)[2:] if t.startswith(("provider:", "model:"))]
            return list(dict.fromkeys(tags))
        provider, model = provider_and_model(task, self.override)
        if task.runs_agent and provider:
            tags.append(f"provider:{provider}")
        if task.runs_agent and model:
            tags.append(f"model:{model}")
        tags += [*task.settings.tags, *task.config.tags]
        return list(dict.fromkeys(tags))

    def task_run(self, task: Task, *extra: str) -> list[str]:
        """Tags of a task run: all of ``of(task)`` or, with task tags turned off, only for
        tasks declaring their own tags."""
        if self.task_tags or task.settings.tags or task.config.tags:
            return [*self.of(task), *extra]
        return []

    def at_creation(self, task: Task, *extra: str) -> list[str]:
        """The tags a task run is created with (none when no tag has a concurrency limit;
        ``late`` ones then go on as it starts)."""
        return self.plan.at_creation(_tag_key(task, extra), self.task_run(task, *extra))

    def late(self, task: Task, *extra: str) -> list[str]:
        return self.plan.late(_tag_key(task, extra))

    async def read_limits(self) -> None:
        """Read the API's tag concurrency limits once (skipped when no task run is tagged)."""
        if not any(self.task_run(task) for task in self.workflow.tasks()):
            self.plan.limited = frozenset()
        else:
            self.plan.limited = await limited_tags()


def _tag_key(task: Task, extra: Sequence[str]) -> str:
    """Which of a task's Prefect tasks (its passes, or its branch run with ``extra``)."""
    return task.path + "|" + ",".join(extra)
