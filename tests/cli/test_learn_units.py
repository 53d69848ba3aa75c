"""Prefect-free pieces of --from, test record and diff."""

from __future__ import annotations

import json

import pytest
from learn_chain import write

from prefect_folpipe.cli._runref import find_run
from prefect_folpipe.cli.testing._strict import (
    ToolQueue,
    conversation,
    explain,
    request_fingerprint,
    view,
)
from prefect_folpipe.compile.history import rerun_line
from prefect_folpipe.compile.rerun import rerun_passes, resolve_targets
from prefect_folpipe.errors import ConfigError
from prefect_folpipe.plan._plan import build_plan
from prefect_folpipe.providers.replay import Normalizer
from prefect_folpipe.validate import load_workflow


def tree(tmp_path, execution):
    return load_workflow(
        write(
            tmp_path / "wf",
            {
                "task.yaml": {"name": "t", "subtasks": {"execution_type": "sequential"}},
                "subtasks/10_outer/task.yaml": {
                    "subtasks": execution,
                },
                "subtasks/10_outer/subtasks/10_a/instructions.md": "a",
                "subtasks/10_outer/subtasks/20_b/instructions.md": "b",
                "subtasks/10_outer/subtasks/30_c/instructions.md": "c",
                "subtasks/20_after/instructions.md": "after",
                "subtasks/20_after/subtasks/x/instructions.md": "x",
            },
        )
    )


def test_parallel_siblings_do_not_rerun_loop_siblings_do(tmp_path):
    parallel = tree(tmp_path / "p", {"execution_type": "parallel"})
    passes = rerun_passes(build_plan(parallel), ["outer/b"])
    assert "outer/b" in passes and not {"outer/a", "outer/c"} & passes
    assert {"after", "after/x"} <= passes  # the root's later child, whole
    loop = tree(tmp_path / "l", {"execution_type": "loop", "max_iterations": 2})
    passes = rerun_passes(build_plan(loop), ["outer/b"])
    assert {"outer/a", "outer/b", "outer/c", "after"} <= passes


def test_a_name_two_tasks_share_is_fp405(tmp_path):
    workflow = load_workflow(
        write(
            tmp_path / "wf",
            {
                "task.yaml": {"name": "t"},
                "subtasks/a/subtasks/same/instructions.md": "1",
                "subtasks/b/subtasks/same/instructions.md": "2",
            },
        )
    )
    with pytest.raises(ConfigError) as caught:
        resolve_targets(workflow, ["same"])
    assert caught.value.code == "FP405" and "a/same" in str(caught.value)
    assert resolve_targets(workflow, ["b/same", "b/same"]) == ("b/same",)


def test_fingerprints_ignore_call_ids_and_explain_shows_the_changed_line(tmp_path):
    normal = Normalizer(tmp_path)
    recorded = {
        "system": "Be brief.\nCite sources.",
        "calls": [
            {"request": [{"role": "user", "content": f"in {tmp_path}"}], "answer": {"text": "",
             "tool_calls": [{"id": "x1", "name": "t", "arguments": {}}]}},
            {"request": [{"role": "tool", "results": [{"call_id": "x1", "name": "t",
             "content": "r"}]}], "answer": {"text": "done"}},
        ],
    }  # fmt: skip
    second = view(recorded["system"], conversation(recorded, 1), normal)
    assert second["messages"][0]["content"] == "in <workflow>"
    renamed = json.loads(json.dumps(conversation(recorded, 1)).replace("x1", "call_9"))
    assert request_fingerprint(view(recorded["system"], renamed, normal)) == request_fingerprint(
        second
    )
    now = view("Be brief.\nCite every source.", conversation(recorded, 1), normal)
    text = explain("draft", 2, second, now)
    assert text.startswith("task 'draft', model call 2: the request differs")
    assert "-Cite sources." in text and "+Cite every source." in text


def test_tool_queue_hands_out_results_in_order():
    queue = ToolQueue()
    queue.add("t", "one")
    queue.add("t", "two")
    assert "t" in queue and "u" not in queue and len(queue) == 1
    assert [queue["t"], queue["t"]] == ["one", "two"]
    assert "t" not in queue


def test_runs_are_named_by_record_id_latest_or_previous(tmp_path):
    from prefect_folpipe.compile.report import write_record

    folder = tmp_path / ".folpipe" / "runs"
    folder.mkdir(parents=True)
    for name, run_id in (("20260101T000000-aaa", "1111"), ("20260102T000000-bbb", "2222")):
        write_record(folder / f"{name}.json", {"status": "completed", "flow_run_id": run_id})
    assert find_run(tmp_path, "latest")["flow_run_id"] == "2222"
    assert find_run(tmp_path, "previous")["flow_run_id"] == "1111"
    assert find_run(tmp_path, "20260101")["flow_run_id"] == "1111"
    assert find_run(tmp_path, "2222")["name"] == "20260102T000000-bbb.json"
    with pytest.raises(ConfigError) as caught:
        find_run(tmp_path, "2026")
    assert caught.value.code == "FP183"


def test_the_rerun_line():
    line = rerun_line(
        {"from": ["draft"], "rerun": ["draft", "publish"], "restored": ["research"],
         "model_calls": 2, "cost_usd": 0.01, "saved_model_calls": 1, "saved_tokens": 900,
         "saved_cost_usd": 0.005}
    )  # fmt: skip
    assert line == (
        "--from draft: 2 tasks re-ran, 1 from checkpoints · 2 paid calls, $0.0100 · saved "
        "1 call, 900 tokens, $0.0050 against running everything"
    )
