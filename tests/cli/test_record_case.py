"""``folpipe test record``: a run becomes a strict test case; an instructions edit fails it."""

from __future__ import annotations

import json

import pytest
import yaml
from inprocess import folpipe_in_process
from learn_chain import chain

pytestmark = pytest.mark.prefect
SECRET = "tok-very-secret-4821"


def folpipe(env, *args):
    """``folpipe ARGS`` in this process (tests/inprocess.py), with ``env`` added."""
    api_url = env["PREFECT_API_URL"]
    extra = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    return folpipe_in_process(*map(str, args), api_url=api_url, env=extra)


def test_record_replay_then_an_instructions_edit_fails_naming_the_task(tmp_path, prefect_harness):
    env = {"PREFECT_API_URL": prefect_harness, "MY_SERVICE_TOKEN": SECRET}
    wf = chain(tmp_path / "wf", tool=True)
    context = json.dumps({"topic": "agents", "note": f"key {SECRET}"})
    assert folpipe(env, "run", wf, "--json", "--context", context).returncode == 0

    made = folpipe(env, "test", "record", wf, "--name", "golden")
    assert made.returncode == 0, made.stderr
    case_file = wf / "tests" / "golden.yaml"
    text = case_file.read_text()
    assert SECRET not in text and str(wf) not in text  # masked; the folder is <workflow>
    case = yaml.safe_load(text)["cases"][0]
    assert case["name"] == "golden"
    research = case["recorded"]["research"][0]["calls"]
    assert [c["answer"]["text"] for c in research] == ["", "found it"]
    assert all(c["fingerprint"].startswith("sha256:") for c in research)
    tool_message = research[1]["request"][0]
    assert tool_message["results"][0]["content"] == "definition of agents"  # not replay-safe
    assert case["expect"]["status"] == "completed"
    assert case["expect"]["ran"] == ["research", "draft", "publish"]
    assert case["expect"]["context"]["publish"] == "published"
    assert case["expect"]["tool_calls"] == [
        {"task": "research", "name": "lookup", "arguments": {"q": "agents"}}
    ]

    passed = folpipe(env, "test", wf, "-k", "golden", "--json")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert json.loads(passed.stdout)["cases"][0]["ok"] is True

    (wf / "subtasks" / "20_draft" / "instructions.md").write_text(
        "Draft a short post from the research."
    )
    failed = folpipe(env, "test", wf, "-k", "golden")
    assert failed.returncode == 1
    out = failed.stdout
    assert "task 'draft', model call 1: the request differs" in out
    assert "-Draft a post from the research." in out
    assert "+Draft a short post from the research." in out


def invoke(*args):
    from click.testing import CliRunner

    from prefect_folpipe.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_replay_safe_tool_runs_and_a_changed_result_fails_at_the_next_request(tmp_path, run):
    wf = chain(tmp_path / "wf", tool=True, safe=True)
    assert run(wf).status == "completed"
    made = invoke("test", "record", wf, "--name", "safe tool")
    assert made.exit_code == 0, made.output
    assert (wf / "tests" / "safe-tool.yaml").is_file()
    assert invoke("test", wf, "-k", "safe").exit_code == 0
    tool = wf / "subtasks" / "10_research" / "tools" / "lookup.py"
    tool.write_text(tool.read_text().replace("definition of", "meaning of"))
    proc = invoke("test", wf, "--json")
    assert proc.exit_code == 1
    failure = json.loads(proc.stdout)["cases"][0]["failures"][0]
    assert "task 'research', model call 2: the request differs" in failure
    assert "(message 3)" in failure
    assert "-  content: definition of agents" in failure
    assert "+  content: meaning of agents" in failure


def test_repeat_reports_a_pass_rate_and_min_pass_sets_the_exit_code(tmp_path, run):
    wf = chain(tmp_path / "wf")
    assert run(wf).status == "completed"
    assert invoke("test", "record", wf, "--name", "golden").exit_code == 0
    proc = invoke("test", wf, "--repeat", "2", "--json")
    assert proc.exit_code == 0, proc.output
    doc = json.loads(proc.stdout)
    assert doc["repeat"] == 2 and doc["cases"][0]["pass_rate"] == 1.0
    assert doc["cases"][0]["runs"] == 2
    case = wf / "tests" / "golden.yaml"
    case.write_text(case.read_text().replace("publish: published", "publish: unpublished"))
    low = invoke("test", wf, "--repeat", "2", "--min-pass", "0.5")
    assert low.exit_code == 1 and "0/2 (0%)" in low.output


def test_record_without_a_run_is_a_coded_error(tmp_path, prefect_harness):
    wf = chain(tmp_path / "wf")
    proc = invoke("test", "record", wf, "--name", "x")
    assert proc.exit_code == 2 and "FP183" in proc.output
