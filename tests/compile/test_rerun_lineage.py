"""What keys a ``--from`` run's re-run passes, and how a resume of it keeps them (issue 31
point 8): the passes ``--from`` asks again are keyed on the ``--from`` run that asked, so the
run that resumes it (``folpipe resume`` locally; the UI's Retry or ``folpipe resume --flow-run``
of a deployment's run, which is the same flow run with the same parameters) finds what they
paid for; a new ``--from`` run keys them afresh. The end to end kill-and-resume test:
``tests/providers/test_rerun_resume.py``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from builders import make_task

from prefect_folpipe.cli.resume import describe, rerun_of
from prefect_folpipe.compile import build
from prefect_folpipe.compile.api import rerun_parameters
from prefect_folpipe.compile.options import RunOptions

PASSES = frozenset({"agent"})
AGENT = make_task("agent", "agent")
OTHER = make_task("other", "other")


def _under_flow_run(monkeypatch: pytest.MonkeyPatch, flow_run_id: str, deployed: bool) -> None:
    flow_run = SimpleNamespace(id=flow_run_id, deployment_id="dep-1" if deployed else None)
    context = SimpleNamespace(flow_run=flow_run)
    monkeypatch.setattr(build.FlowRunContext, "get", staticmethod(lambda: context))


def test_a_deployment_rerun_retried_keeps_its_rerun_passes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``folpipe resume --flow-run D --from agent`` makes flow run D with ``rerun_from`` and
    ``restore_from``; a resume of D (the UI's Retry, ``folpipe resume --flow-run D``) runs the
    same flow run with the same parameters: the same re-run key, the same lineage."""
    parameters = {"rerun_from": ["agent"], "restore_from": "run-b"}
    options = replace(RunOptions(), **rerun_parameters(**parameters))
    assert options.rerun_from == ("agent",) and options.lineage == "run-b"
    _under_flow_run(monkeypatch, "run-d", deployed=True)
    first = build.checkpoint_scope(options, PASSES)
    retried = build.checkpoint_scope(
        replace(RunOptions(), **rerun_parameters(**parameters)), PASSES
    )
    assert first == retried and first.rerun_id == "run-d" and first.lineage == "run-b"
    assert first.salt(AGENT) == "lineage:run-b|rerun:run-d" and first.renews(AGENT)
    assert not first.reruns(OTHER)
    # another re-run of the same run from the same task is a new flow run: asked afresh
    _under_flow_run(monkeypatch, "run-e", deployed=True)
    assert build.checkpoint_scope(options, PASSES).salt(AGENT) != first.salt(AGENT)


def test_a_local_resume_of_a_from_run_continues_its_rerun_key(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _under_flow_run(monkeypatch, "run-b", deployed=False)
    killed = build.checkpoint_scope(RunOptions(rerun_from=("agent",)), PASSES)
    assert killed.rerun_id == "run-b"
    record = {"rerun_from": ["agent"], "rerun_id": killed.rerun_id, "lineage": "run-b"}
    names, rerun_id = rerun_of(record)
    _under_flow_run(monkeypatch, "run-c", deployed=False)  # the resume: a new flow run
    resumed = build.checkpoint_scope(
        RunOptions(rerun_from=names, rerun_id=rerun_id, lineage="run-b"), PASSES
    )
    assert resumed.salt(AGENT) == killed.salt(AGENT)
    # without the record's key the resume would ask every re-run call again
    fresh = build.checkpoint_scope(RunOptions(rerun_from=names, lineage="run-b"), PASSES)
    assert fresh.salt(AGENT) != killed.salt(AGENT)


def test_the_run_record_keeps_what_a_resume_needs(tmp_path: Path) -> None:
    from builders import write_workflow

    from prefect_folpipe.compile.report import read_record
    from prefect_folpipe.compile.report._runs import RunRecord
    from prefect_folpipe.validate import load_workflow

    root = write_workflow(tmp_path / "wf", {"task.yaml": {"name": "w"}, "instructions.md": "Hi."})
    workflow = load_workflow(root)
    options = RunOptions(rerun_from=("agent",))
    record = RunRecord.start(workflow, {}, options, "run-b", rerun_id="run-b")
    data: dict[str, Any] = read_record(record.path) or {}
    assert rerun_of(data) == (("agent",), "run-b")
    assert "a re-run from agent" in describe({**data, "file": str(record.path)})
    plain = RunRecord.start(workflow, {}, RunOptions(), "run-a")
    assert rerun_of(read_record(plain.path) or {}) == ((), None)
    assert rerun_of({"rerun_from": "agent"}) == ((), None)  # not a list: nothing carried
