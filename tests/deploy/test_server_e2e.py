"""End to end on a real ``prefect server`` backed by a real PostgreSQL (``prefect_pg_server``;
skips loudly where no PostgreSQL can be started): deploy, schedule, work, parameters, resume.

A workflow folder (``tests/fixtures/deploy/report``, offline on its scripted replies) is deployed
four ways onto a process work pool: ``folpipe deploy``, plain ``prefect --no-prompt deploy`` from
the prefect.yaml that ``folpipe deploy init`` wrote (in a copy of the folder: the file holds no
absolute path), ``--generic``, and a deployment whose ``write`` task fails while a marker file
exists. ``prefect worker start --run-once`` executes the runs in two passes; the Prefect client
checks states, task run names and typed parameters, that a scheduled run re-runs its tasks
(fresh, though an earlier run had the same inputs), and that ``folpipe resume`` retries the
failed deployment run itself, through the API, with its finished task Cached.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .runs import (
    copy_workflow,
    create_pool,
    evidence,
    flow_run_states,
    folpipe,
    keep_first_scheduled_run,
    ok,
    run_worker_once,
    task_run_states,
    trigger,
)
from .server import FOLPIPE, PREFECT, PrefectServer

POOL = "folpipe-e2e"
DONE = {"research": "Completed", "write": "Completed"}

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]


def test_deploy_schedule_work_and_resume_on_a_real_server(
    prefect_pg_server: PrefectServer, tmp_path: Path
) -> None:
    server = prefect_pg_server
    create_pool(server, POOL)
    via_api, resumable, generic = (copy_workflow(tmp_path, n) for n in ("api", "resume", "gen"))

    # 1. folpipe deploy through Prefect's API
    args = ["deploy", str(via_api), "--name", "api", "--pool", POOL, "--param", "topic=alpha"]
    deployed = json.loads(ok(folpipe(server, *args, "--json")).stdout)
    assert deployed["full_name"] == "report/api"
    assert deployed["entrypoint"] == "flow.py:flow"
    assert deployed["parameters"] == {"audience": "engineers", "topic": "alpha"}
    assert (via_api / "flow.py").is_file()

    # 2. plain `prefect deploy` from the prefect.yaml `folpipe deploy init` wrote; the file
    # names no absolute path, so a copy of the folder deploys from where it now is
    written = copy_workflow(tmp_path / "checkout-1", "report")
    init = ["deploy", "init", str(written), "--name", "yaml", "--pool", POOL]
    ok(folpipe(server, *init, "--param", "topic=beta"))
    assert str(tmp_path) not in (written / "prefect.yaml").read_text()
    via_yaml = tmp_path / "checkout-2" / "report"
    shutil.copytree(written, via_yaml)
    ok(server.run([PREFECT, "--no-prompt", "deploy", "--all"], cwd=via_yaml))

    # 3. a deployment whose last task fails while .folpipe/fail-write exists
    marker = resumable / ".folpipe" / "fail-write"
    marker.parent.mkdir()
    marker.touch()
    args = ["deploy", str(resumable), "--name", "resume", "--pool", POOL, "--param", "topic=delta"]
    ok(folpipe(server, *args))

    # 4. the generic entrypoint: prefect_folpipe.flows:run_workflow_folder with path=<folder>
    args = ["deploy", str(generic), "--generic", "--name", "gen", "--pool", POOL, "--json"]
    deployed = json.loads(ok(folpipe(server, *args, "--param", "topic=zeta")).stdout)
    assert deployed["entrypoint"] == "prefect_folpipe.flows.run_workflow_folder"
    assert deployed["parameters"]["path"] == str(generic.resolve())

    # 5. typed parameters: the form's types are enforced by the server, and reach the workflow
    bad = server.run([PREFECT, "deployment", "run", "report/api", "--param", "pages=three"])
    assert bad.returncode != 0
    manual = trigger(server, "report/api", "topic=gamma", "pages=3")
    with_defaults = trigger(server, "report/api")  # topic=alpha: the deployment's default
    via_generic = trigger(server, "folpipe-run/gen")
    from_yaml = trigger(server, "report/yaml")
    doomed = trigger(server, "report/resume")
    run_worker_once(server, POOL, tmp_path / "worker-1.log", cli=True)

    states = flow_run_states(server, [manual, with_defaults, from_yaml, doomed, via_generic])
    assert states == {
        via_generic: "Completed",
        manual: "Completed",
        with_defaults: "Completed",
        from_yaml: "Completed",
        doomed: "Failed",
    }
    # task runs are named after the folders' task paths
    assert task_run_states(server, manual, DONE) == DONE
    # parameters reached the workflow, typed: the run's, the deployment's, the deploy: block's
    seen = evidence(via_api, manual)
    assert (seen["topic"], seen["audience"], seen["pages"]) == ("gamma", "engineers", 3)
    assert "gamma" in str(seen["research"])
    assert evidence(via_api, with_defaults)["topic"] == "alpha"
    assert evidence(via_yaml, from_yaml)["topic"] == "beta"
    assert evidence(generic, via_generic)["topic"] == "zeta"
    assert task_run_states(server, via_generic, DONE) == DONE
    failed_write = {"research": "Completed", "write": "Failed"}
    assert task_run_states(server, doomed, failed_write) == failed_write

    # 6. a schedule fires: its run re-runs every task, though a local run of the folder with
    # the same inputs left checkpoints that the next local run reuses
    local = ["run", str(via_api), "--context", '{"topic": "alpha", "audience": "engineers"}']
    ok(server.run([FOLPIPE, *local]))
    assert "3 of 3 tasks from checkpoints" in ok(server.run([FOLPIPE, *local])).stdout
    args = ["deploy", str(via_api), "--name", "nightly", "--pool", POOL, "--param", "topic=alpha"]
    ok(folpipe(server, *args, "--interval", "3"))  # a run due within 3 s
    scheduled = keep_first_scheduled_run(server, "report/nightly")

    # 7. folpipe resume retries the failed deployment run itself, through the API
    marker.unlink()
    resumed = ok(folpipe(server, "resume", resumable, "--json"))
    retry = json.loads(resumed.stdout)
    assert (retry["resumed"], retry["flow_run_id"]) == ("api", str(doomed))
    assert retry["work_pool"] == POOL and "Traceback" not in resumed.stderr
    run_worker_once(server, POOL, tmp_path / "worker-2.log", cli=True)

    assert flow_run_states(server, [scheduled, doomed]) == {
        scheduled: "Completed",
        doomed: "Completed",
    }
    assert evidence(via_api, scheduled)["topic"] == "alpha"
    assert task_run_states(server, scheduled, DONE) == DONE
    retried = {"research": "Cached", "write": "Completed"}
    assert task_run_states(server, doomed, retried) == retried

    # folpipe status reads the same history: the retried run once, per task of the tree (the
    # root included), as its summary counts them
    status = json.loads(ok(folpipe(server, "status", resumable, "--json")).stdout)
    runs = {run["flow_run_id"]: run for run in status["runs"]}
    assert list(runs) == [str(doomed)]
    assert runs[str(doomed)]["state"] == "Completed"
    assert runs[str(doomed)]["counted_from"] == "summary"
    assert runs[str(doomed)]["tasks"]["total"] == 3
    assert runs[str(doomed)]["tasks"]["cached"] == 1
    assert runs[str(doomed)]["tasks"]["failed"] == 0
