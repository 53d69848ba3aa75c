"""TagPlan: task runs are created tagged only when a tag has a concurrency limit."""

from __future__ import annotations

from types import SimpleNamespace

from prefect_folpipe.compile.tags import TagPlan, tag_task_run

TAGS = ["folpipe", "workflow:w", "model:m"]


def test_unknown_limits_keep_every_tag_at_creation():
    plan = TagPlan()
    assert plan.at_creation("a|", list(TAGS)) == TAGS
    assert plan.late("a|") == []


def test_without_a_limit_tags_wait_for_the_start():
    plan = TagPlan()
    plan.limited = frozenset({"other"})
    assert plan.at_creation("a|", list(TAGS)) == []
    assert plan.late("a|") == TAGS


def test_a_limited_tag_keeps_every_tag_at_creation():
    plan = TagPlan()
    plan.limited = frozenset({"model:m"})
    assert plan.at_creation("a|", list(TAGS)) == TAGS
    assert plan.late("a|") == []


def test_tag_task_run_adds_missing_tags_in_order_once():
    context = SimpleNamespace(task_run=SimpleNamespace(tags=["user"]))
    tag_task_run(context, TAGS)
    tag_task_run(context, TAGS)
    assert context.task_run.tags == ["user", *TAGS]
    tag_task_run(None, TAGS)  # outside a task run: nothing to tag
