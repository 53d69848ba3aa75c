"""``folpipe deploy / serve / install-deps / status`` from the command line, bad input included.

Bad input must end with a coded error and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from inprocess import folpipe_in_process

from prefect_folpipe.deploy.dependencies import install_command
from prefect_folpipe.errors import ConfigError

from .runs import create_pool
from .server import FOLPIPE, PrefectServer, free_port, stop_process_group

pytestmark = pytest.mark.slow  # deploys, installs, imports Prefect: seconds each

FIXTURE = Path(__file__).parent.parent / "fixtures" / "deploy" / "report"


@pytest.fixture
def report(tmp_path: Path) -> Path:
    target = tmp_path / "report"
    shutil.copytree(FIXTURE, target)
    return target


def folpipe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``folpipe ARGS`` without a Prefect API (or with the unreachable one of ``env``), in
    this process: what the command prints and exits with."""
    return folpipe_in_process(*args, api_url=(env or {}).get("PREFECT_API_URL"))


def folpipe_process(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``folpipe ARGS`` as a process of its own, against a real server: it loads the
    folder's ``flow.py`` as ``prefect deploy`` would, in a fresh interpreter."""
    return subprocess.run(
        [FOLPIPE, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def serving_alive(serving: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """``folpipe serve`` has not exited (else its log)."""
    assert serving.poll() is None, (tmp_path / "serve.log").read_text()


def assert_coded_error(done: subprocess.CompletedProcess[str], code: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert code in done.stderr, done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--cron", "0 25 * * *", "--pool", "p"], "FP601"),
        (["--cron", "0 3 * * *", "--timezone", "Moon/Base", "--pool", "p"], "FP603"),
        (["--cron", "0 3 * * *", "--interval", "60", "--pool", "p"], "FP611"),
        (["--interval", "0", "--pool", "p"], "FP611"),
        (["--param", "no-equals-sign", "--pool", "p"], "FP612"),
        (["--param", "colour=red", "--pool", "p"], "FP612"),
        (["--name", "a/b", "--pool", "p"], "FP623"),
        ([], "FP614"),
        (["--pool", "p"], "FP615"),
    ],
)
def test_bad_deploy_input_is_a_coded_error(report: Path, extra: list[str], code: str) -> None:
    assert_coded_error(folpipe("deploy", str(report), *extra), code)


def test_missing_folder_and_invalid_workflow(tmp_path: Path, report: Path) -> None:
    assert_coded_error(folpipe("deploy", str(tmp_path / "missing"), "--pool", "p"), "FP610")
    assert_coded_error(folpipe("deploy", "init", str(tmp_path / "missing")), "FP610")
    (report / "task.yaml").write_text(
        (report / "task.yaml").read_text() + "  schedule: {cron: '61 * * * *'}\n"
    )
    done = folpipe("deploy", str(report), "--pool", "p")
    assert_coded_error(done, "FP601")
    assert "task.yaml" in done.stderr


def test_unreachable_api_is_fp616(report: Path) -> None:
    env = {"PREFECT_API_URL": f"http://127.0.0.1:{free_port()}/api"}
    assert_coded_error(folpipe("deploy", str(report), "--pool", "p", env=env), "FP616")


def test_errors_as_json(report: Path) -> None:
    done = folpipe("deploy", str(report), "--json")
    assert done.returncode == 2
    payload = json.loads(done.stdout)
    assert payload["ok"] is False
    assert payload["error"]["code"] == "FP614"
    assert payload["error"]["hint"]


def test_install_deps_dry_run_and_real(report: Path) -> None:
    dry = folpipe("install-deps", str(report), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    payload = json.loads(dry.stdout)
    assert payload["packages"] == ["pyyaml>=6"]
    assert payload["ran"] is False
    assert "install" in payload["command"] and payload["command"][-1] == "pyyaml>=6"
    real = folpipe("install-deps", str(report))  # already installed: no network needed
    assert real.returncode == 0, real.stderr
    assert "installed 1 package" in real.stdout


def test_install_without_uv_or_pip_is_fp621(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigError) as excinfo:
        install_command(["rich"], python="/bin/false")
    assert excinfo.value.code == "FP621"


def test_deploy_init_writes_a_prefect_project(report: Path) -> None:
    done = folpipe("deploy", "init", str(report), "--pool", "p", "--cron", "0 3 * * *", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(Path(f).name for f in json.loads(done.stdout)["written"]) == [
        "flow.py",
        "prefect.yaml",
    ]
    again = folpipe("deploy", "init", str(report), "--pool", "other")
    assert_coded_error(again, "FP617")
    assert folpipe("deploy", "init", str(report), "--pool", "other", "--force").returncode == 0


@pytest.mark.server
def test_unknown_pool_and_broken_flow_file(prefect_server: PrefectServer, report: Path) -> None:
    env = prefect_server.env
    assert_coded_error(
        folpipe_process("deploy", str(report), "--pool", "no-such-pool", env=env), "FP613"
    )
    create_pool(prefect_server, "cli-pool", overwrite=True)
    scheduled = folpipe_process(
        "deploy", str(report), "--pool", "cli-pool", "--interval", "60", env=env
    )
    assert scheduled.returncode == 0, scheduled.stderr
    assert "  schedule: every 60 s\n" in scheduled.stdout  # as people write it, not a dict
    (report / "flow.py").write_text("raise RuntimeError('broken on purpose')\n")
    done = folpipe_process("deploy", str(report), "--pool", "cli-pool", env=env)
    assert_coded_error(done, "FP619")
    assert "flow.py" in done.stderr


@pytest.mark.server
@pytest.mark.timeout(300)
def test_serve_runs_a_workflow_without_a_work_pool(
    prefect_server: PrefectServer, report: Path, tmp_path: Path
) -> None:
    from .runs import evidence, flow_run_states, trigger, wait_for_deployment, with_client

    server = prefect_server
    args = [FOLPIPE, "serve", str(report), "--generic", "--name", "served", "--param", "topic=eta"]
    serving = server.spawn(args, log=tmp_path / "serve.log")
    try:
        deadline = time.monotonic() + 120
        wait_for_deployment(server, "folpipe-run/served", lambda: serving_alive(serving, tmp_path))
        run_id = trigger(server, "folpipe-run/served")
        while flow_run_states(server, [run_id])[run_id] not in ("Completed", "Failed", "Crashed"):
            assert time.monotonic() < deadline + 120, (tmp_path / "serve.log").read_text()
            time.sleep(0.25)
    finally:
        stop_process_group(serving)
    assert flow_run_states(server, [run_id]) == {run_id: "Completed"}
    assert evidence(report, run_id)["topic"] == "eta"

    async def name_of(client: object) -> str:
        return (await client.read_flow_run(run_id)).name  # type: ignore[attr-defined]

    assert with_client(server, name_of).startswith("report-")


@pytest.mark.server
@pytest.mark.timeout(300)
def test_serve_never_takes_over_a_work_pool_deployment(
    prefect_server: PrefectServer, report: Path, tmp_path: Path
) -> None:
    """`folpipe deploy` (or `prefect deploy`) made report/research for a pool: serving that
    name is refused (FP624); serving by default registers report/report-serve, and stopping
    it pauses only that one."""
    from .runs import wait_for_deployment, with_client

    server = prefect_server
    create_pool(server, "serve-pool", overwrite=True)
    deploy = ["deploy", str(report), "--name", "research", "--pool", "serve-pool"]
    assert folpipe_process(*deploy, "--interval", "3600", env=server.env).returncode == 0

    refused = folpipe_process("serve", str(report), "--name", "research", env=server.env)
    assert_coded_error(refused, "FP624")
    assert "--name research-serve" in refused.stderr

    serving = server.spawn([FOLPIPE, "serve", str(report)], log=tmp_path / "serve.log")
    try:
        wait_for_deployment(
            server, "report/report-serve", lambda: serving_alive(serving, tmp_path), polled=True
        )
    finally:
        stop_process_group(serving)

    async def read(client: object) -> dict[str, tuple[bool, str | None]]:
        found = {}
        for name in ("report/research", "report/report-serve"):
            deployment = await client.read_deployment_by_name(name)  # type: ignore[attr-defined]
            found[name] = (deployment.paused, deployment.work_pool_name)
        return found

    assert with_client(server, read) == {
        "report/research": (False, "serve-pool"),  # untouched
        "report/report-serve": (True, None),  # serve's own, paused by Prefect on stop
    }
