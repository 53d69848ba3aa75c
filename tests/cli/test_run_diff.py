"""``folpipe diff``: two runs compared after an instructions edit."""

from __future__ import annotations

import json

import pytest
import yaml
from learn_chain import chain

from prefect_folpipe.cli.diff import value_diff

pytestmark = pytest.mark.prefect


def invoke(*args):
    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def test_diff_after_an_instructions_edit(tmp_path, run):
    wf = chain(tmp_path / "wf")
    replies = yaml.safe_load((wf / "replies.yaml").read_text())
    replies["tasks"]["draft"] = [{"echo": True}]
    (wf / "replies.yaml").write_text(yaml.safe_dump(replies))
    assert run(wf).status == "completed"
    (wf / "subtasks" / "20_draft" / "instructions.md").write_text("Draft a short post.")
    assert run(wf).status == "completed"

    proc = invoke("diff", wf, "previous", "latest", "--json")
    assert proc.exit_code == 0, proc.output
    doc = json.loads(proc.stdout)
    tasks = {t["path"]: t for t in doc["tasks"]}
    assert tasks["research"]["a"]["status"] == "completed"
    assert tasks["research"]["b"]["status"] == "cached" and not tasks["research"]["changed"]
    assert tasks["draft"]["b"]["status"] == "completed" and "draft" in tasks["draft"]["changed"]
    assert "Draft a short post." in tasks["draft"]["changed"]["draft"]
    assert tasks["publish"]["b"]["ran"] and not tasks["publish"]["changed"]  # same answer
    assert doc["totals"]["a"]["model_calls"] == 3 and doc["totals"]["b"]["model_calls"] == 2
    assert doc["totals"]["b"]["cached"] == 1

    shown = invoke("diff", "--path", wf)  # previous -> latest by default
    assert shown.exit_code == 0, shown.output
    assert "draft" in shown.output and "from checkpoints" in shown.output

    missing = invoke("diff", wf, "nope", "latest", "--json")
    assert missing.exit_code == 2 and json.loads(missing.stdout)["error"]["code"] == "FP183"


def test_value_diff_is_short():
    assert value_diff("a", "b") == "a → b"
    assert value_diff(None, {"k": 1}) == '(none) → {"k": 1}'
    text = value_diff("one\ntwo\nthree", "one\n2\nthree")
    assert text == "-two +2"
    assert len(value_diff("x" * 500, "y")) < 140
