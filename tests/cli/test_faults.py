"""Faults as inputs (issue 11 points 9, 10, 11): ``folpipe run`` killed with SIGKILL, stopped by
SIGTERM / SIGINT, and pointed at a Prefect API that is down or answers 503 — each as a real
subprocess. Nothing lost (``resume`` takes the interrupted run, with its own context), nothing
leaked (tool processes, the temporary server), no traceback (coded errors, the run document)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from builders import write_workflow

pytestmark = pytest.mark.prefect

SIDE_EFFECT_S = 4


def _workflow(root: Path) -> Path:
    """``first`` answers at once; ``slow`` calls a shell tool that says it started, sleeps
    ``SIDE_EFFECT_S`` (less once :func:`_release` was called: a resumed run need not wait it
    out) and then leaves a side effect (``effect.txt``); ``last`` answers at once."""
    started, effect = root.parent / f"{root.name}.started", root.parent / f"{root.name}.effect"
    released = root.parent / f"{root.name}.released"
    script = (
        f"echo go >> {started}; for _ in $(seq {SIDE_EFFECT_S * 10}); "
        f"do [ -e {released} ] && break; sleep 0.1; done; echo done >> {effect}"
    )
    return write_workflow(
        root,
        {
            "task.yaml": {"name": "faults", "subtasks": {"execution_type": "sequential"}},
            "replies.yaml": {
                "tasks": {
                    "slow": [{"tool_calls": [{"name": "side_effect", "arguments": {}}]}, "slept"],
                }
            },
            "subtasks/10_first/instructions.md": "First.",
            "subtasks/20_slow/instructions.md": "Call the tool.",
            "subtasks/20_slow/task.yaml": {"settings": {"max_retries": 0}},
            "subtasks/20_slow/tools.md": (
                f"## side_effect\n> type: shell\n> params: \n\n```bash\n{script}\n```\n"
            ),
            "subtasks/30_last/instructions.md": "Last.",
        },
    )


def _started(root: Path) -> Path:
    return root.parent / f"{root.name}.started"


def _effect(root: Path) -> Path:
    return root.parent / f"{root.name}.effect"


def _release(root: Path) -> None:
    """From now on the tool of :func:`_workflow` ends its sleep at once (for the resume that
    runs it again, once the interrupted run's tool is gone)."""
    (root.parent / f"{root.name}.released").touch()


def _start(env: dict[str, str], *args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_as_from_a_shell,
    )


def _as_from_a_shell() -> None:
    """The child gets Ctrl-C as from an interactive shell: an ignored SIGINT is inherited,
    and a pytest-xdist worker's may be (folpipe keeps an ignored SIGINT ignored, as a
    ``nohup`` or background job expects)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _folpipe(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prefect_folpipe", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _status(
    cli_env: dict[str, str], root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``folpipe status ROOT ARGS`` against ``cli_env``'s API, in this process (what it
    prints), with the variables ``env`` set."""
    from inprocess import folpipe_in_process

    api = cli_env["PREFECT_API_URL"]
    return folpipe_in_process("status", str(root), *args, api_url=api, env=env)


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _writers_of(path: Path) -> list[int]:
    """Live processes whose command line names ``path``: the tool's ``bash -c`` script and
    the subshells it forked. Once there are none, nothing can still write ``path``."""
    text = str(path)
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(int(entry.name))
    return found


def _wait_until_nothing_can_write(path: Path) -> None:
    """Instead of waiting out the side effect's sleep: wait until no process is left that
    could still write ``path``."""
    _wait_for(lambda: not _writers_of(path), SIDE_EFFECT_S + 1, f"the writers of {path.name}")


def _run_until_the_tool_runs(env: dict[str, str], root: Path, *args: str) -> Any:
    proc = _start(env, "run", root, "--json", *args)
    try:
        _wait_for(_started(root).exists, 240, "the shell tool to start")
    except AssertionError:
        proc.kill()
        raise AssertionError(proc.communicate()[1][-3000:]) from None
    return proc


def _records(root: Path) -> list[dict[str, Any]]:
    folder = root / ".folpipe" / "runs"
    return [json.loads(file.read_text()) for file in sorted(folder.glob("*.json"))]


def _clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-4000:]
    assert "Aborted!" not in stderr
    assert "can't register atexit" not in stderr


def _flow_run_state(flow_run_id: str) -> Any:
    from prefect.client.orchestration import get_client

    async def read() -> Any:
        async with get_client() as client:
            return (await client.read_flow_run(flow_run_id)).state

    return asyncio.run(read())


def _pids_in_group(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    found.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                continue
    return found


# ------------------------------------------------------------------- SIGKILL, then resume


def test_sigkill_mid_run_kills_the_tool_and_resume_takes_the_crashed_run(tmp_path, cli_env):
    root = _workflow(tmp_path / "wf")
    failing = write_workflow(
        tmp_path / "replies", {"replies.yaml": {"tasks": {"first": [{"error": "auth"}]}}}
    )
    from inprocess import folpipe_in_process

    scripted = {"FOLPIPE_PROVIDER": "scripted", "FOLPIPE_REPLIES": str(failing / "replies.yaml")}
    old = folpipe_in_process(  # in this process: only its exit code and record matter
        "run", str(root), "--json", "--context", '{"attempt": "old"}',
        api_url=cli_env["PREFECT_API_URL"], env=scripted,
    )  # fmt: skip
    assert old.returncode == 1, old.stderr  # an older failed run is on record
    assert not _started(root).exists()  # it failed before the tool

    proc = _run_until_the_tool_runs(cli_env, root, "--context", '{"attempt": "new"}')
    tool_group = int(_tool_pgid(root))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    _wait_for(lambda: not _pids_in_group(tool_group), 10, "the tool's process group to die")
    _wait_until_nothing_can_write(_effect(root))
    assert not _effect(root).exists(), "the tool finished its side effect after the run died"
    killed = _records(root)[-1]
    assert killed["status"] == "running" and killed["context"] == {"attempt": "new"}
    assert _flow_run_state(killed["flow_run_id"]).is_running()

    _release(root)
    resumed = _folpipe(cli_env, "resume", root, "--json")
    assert resumed.returncode == 0, resumed.stderr
    _clean(resumed.stderr)
    assert f"resuming run {killed['flow_run_id']}" in resumed.stderr
    assert "crashed" in resumed.stderr
    doc = json.loads(resumed.stdout)
    assert doc["context"]["attempt"] == "new"  # the crashed run's own context, not the older
    statuses = {t["path"]: t["status"] for t in doc["tasks"]}
    assert statuses == {
        "": "completed",
        "first": "cached",
        "slow": "completed",
        "last": "completed",
    }
    assert _effect(root).exists()  # the resumed run did the tool's work, once
    state = _flow_run_state(killed["flow_run_id"])
    assert state.is_crashed() and "died" in (state.message or "")
    # folpipe status names the crashed run and says why (issue 12 point 9)
    status = _status(cli_env, root, "--json")
    assert status.returncode == 0, status.stderr
    runs = {run["flow_run_id"]: run for run in json.loads(status.stdout)["runs"]}
    crashed = runs[killed["flow_run_id"]]
    assert crashed["state"] == "Crashed" and "died" in (crashed["message"] or "")
    plain = _status(cli_env, root, env={"COLUMNS": "200"})
    assert "Crashed" in plain.stdout and "died" in plain.stdout, plain.stdout
    records = _records(root)
    assert records[-2]["status"] == "crashed" and records[-2]["resumed_by"]
    assert records[-1]["status"] == "completed"


def _tool_pgid(root: Path) -> str:
    """The process group of the running tool: the session leader is ``bash -c <script>``."""
    marker = str(_started(root))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and "sleep" in cmdline:
            return str(os.getpgid(int(entry.name)))
    raise AssertionError("no tool process found")


def test_sigkill_kills_a_running_shell_hook_and_its_background_job(tmp_path, cli_env):
    """Point 10, hooks: a ``pre_run.sh`` hook (and a job it put in the background) dies with a
    SIGKILLed run; neither reaches its side effect."""
    started, effect = tmp_path / "hook.started", tmp_path / "hook.effect"
    late = tmp_path / "hook.background"
    hook = (
        f"echo go >> {started}\n(sleep {SIDE_EFFECT_S}; echo bg >> {late}) &\n"
        f"sleep {SIDE_EFFECT_S}\necho done >> {effect}\n"
    )
    root = write_workflow(
        tmp_path / "wf",
        {
            "task.yaml": {"name": "hooked"},
            "instructions.md": "Answer.",
            "hooks/pre_run.sh": hook,
            "replies.yaml": {"default": "ok"},
        },
    )
    proc = _start(cli_env, "run", root, "--json")
    try:
        _wait_for(started.exists, 240, "the hook to start")
    except AssertionError:
        proc.kill()
        raise AssertionError(proc.communicate()[1][-3000:]) from None
    hook_file = (root / "hooks" / "pre_run.sh").absolute()
    hook_groups = {os.getpgid(pid) for pid in _pids_with_env(f"FOLPIPE_HOOK_FILE={hook_file}")}
    assert hook_groups and proc.pid not in hook_groups  # the hook has a group of its own
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    for group in hook_groups:
        _wait_for(lambda g=group: not _pids_in_group(g), 10, "the hook's process group to die")
    hook_env = f"FOLPIPE_HOOK_FILE={hook_file}"  # the hook's shell, its job and their children
    _wait_for(lambda: not _pids_with_env(hook_env), SIDE_EFFECT_S + 1, "the hook's processes")
    assert not effect.exists(), "the hook finished its side effect after the run died"
    assert not late.exists(), "the hook's background job outlived the run"


def _signal_mask(pid: int, field: str) -> int:
    """A process's mask of ignored (``SigIgn``) or caught (``SigCgt``) signals."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1], 16)
    return 0


def _pids_with_env(entry_text: str) -> list[int]:
    """Processes whose environment holds ``entry_text`` (a hook's shell and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if entry_text.encode() in environ:
                found.append(int(entry.name))
    return found


# ------------------------------------------------------------------- SIGTERM, SIGINT


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_in_a_coded_report_and_resume_finishes_the_run(tmp_path, cli_env, signum):
    root = _workflow(tmp_path / "wf")
    proc = _run_until_the_tool_runs(cli_env, root, "--context", '{"topic": "signals"}')
    ignored = _signal_mask(proc.pid, "SigIgn")
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)

    assert proc.returncode == 1, f"SigIgn {ignored:#x}\n{stderr[-3000:]}"
    _clean(stderr)
    doc = json.loads(stdout)  # the run document, with the error that stopped it
    assert doc["status"] == "failed"
    assert doc["error"]["code"] == "FP522" and signum.name in doc["error"]["message"]
    assert "folpipe resume" in doc["error"]["hint"]
    statuses = {t["path"]: t["status"] for t in doc["tasks"]}
    assert statuses == {"": "failed", "first": "completed", "slow": "failed", "last": "skipped"}
    assert "interrupted" in doc["tasks"][2]["error"]
    _wait_until_nothing_can_write(_effect(root))
    assert not _effect(root).exists()  # the tool was stopped with the run
    [record] = _records(root)
    assert record["status"] == "interrupted" and record["context"] == {"topic": "signals"}

    _release(root)
    resumed = _folpipe(cli_env, "resume", root, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "interrupted" in resumed.stderr
    doc = json.loads(resumed.stdout)
    assert doc["context"]["topic"] == "signals"
    assert {t["path"]: t["status"] for t in doc["tasks"]}["first"] == "cached"


# ------------------------------------------------------------------- the Prefect API fails


class _Overloaded(BaseHTTPRequestHandler):
    """Every request answers 503 (Retry-After: 0, so Prefect's retries go quickly)."""

    hits: ClassVar[Counter[str]] = Counter()

    def _answer(self) -> None:
        type(self).hits[self.path] += 1
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = b'{"detail": "overloaded"}'
        self.send_response(503)
        self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def overloaded_api() -> Iterator[str]:
    _Overloaded.hits = Counter()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Overloaded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "human"])
def test_an_unreachable_api_is_a_coded_error(tmp_path, cli_env, as_json):
    root = _workflow(tmp_path / "wf")
    env = {**cli_env, "PREFECT_API_URL": f"http://127.0.0.1:{_closed_port()}/api"}
    env["PREFECT_CLIENT_MAX_RETRIES"] = "1"
    proc = _folpipe(env, "run", root, *(["--json"] if as_json else []))
    assert proc.returncode == 1, proc.stderr[-3000:]
    _clean(proc.stderr)
    if as_json:
        doc = json.loads(proc.stdout)
        assert doc["status"] == "failed" and doc["error"]["code"] == "FP520"
        assert [t["status"] for t in doc["tasks"]] == ["skipped"] * 4
        assert all("unreachable" in t["error"] for t in doc["tasks"])
    else:
        assert "error FP520" in proc.stderr and "PREFECT_API_URL" in proc.stderr


def test_an_overloaded_api_is_retried_a_bounded_number_of_times_then_coded(
    tmp_path, cli_env, overloaded_api
):
    root = _workflow(tmp_path / "wf")
    env = {**cli_env, "PREFECT_API_URL": overloaded_api, "PREFECT_CLIENT_MAX_RETRIES": "2"}
    started = time.monotonic()
    proc = _folpipe(env, "run", root, "--json")
    assert time.monotonic() - started < 120
    assert proc.returncode == 1, proc.stderr[-3000:]
    _clean(proc.stderr)
    doc = json.loads(proc.stdout)
    assert doc["error"]["code"] == "FP521" and "503" in doc["error"]["message"]
    assert "3 times" in doc["error"]["message"]
    assert _Overloaded.hits and max(_Overloaded.hits.values()) == 3  # 1 try + 2 retries
    assert sum(_Overloaded.hits.values()) <= 12


# ------------------------------------------------------------------- the temporary server


def _ephemeral_env(cli_env: dict[str, str], home: Path, **extra: str) -> dict[str, str]:
    """No PREFECT_API_URL: ``folpipe run`` starts Prefect's temporary server itself."""
    env = {key: value for key, value in cli_env.items() if key != "PREFECT_API_URL"}
    return {**env, "PREFECT_HOME": str(home), **extra}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_the_temporary_server_does_not_outlive_a_killed_run(tmp_path, cli_env, migrated_home):
    root = _workflow(tmp_path / "wf")
    # a home with a migrated database: the first start of a fresh PREFECT_HOME would migrate
    # one, seconds this test is not about
    home = migrated_home(tmp_path / "home")
    env = _ephemeral_env(cli_env, home, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="240")
    proc = _run_until_the_tool_runs(env, root)
    [server] = [pid for pid in _children(proc.pid) if "uvicorn" in _cmdline(pid)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _wait_for(lambda: "uvicorn" not in _cmdline(server), 20, "the temporary server to stop")
    _wait_until_nothing_can_write(_effect(root))
    assert not _effect(root).exists()


# ------------------------------------------------------------------- a missing required input


def test_a_missing_required_input_fails_the_task_with_a_code_not_a_traceback(tmp_path, cli_env):
    """Issue 11 point 4, through the CLI (it already held: this guards it)."""
    root = write_workflow(
        tmp_path / "wf",
        {
            "task.yaml": {"name": "needs", "input": {"required": ["api_base_url"]}},
            "instructions.md": "Call {api_base_url}.",
        },
    )
    proc = _folpipe(cli_env, "run", root, "--json")
    assert proc.returncode == 1, proc.stderr[-3000:]
    _clean(proc.stderr)
    [task] = json.loads(proc.stdout)["tasks"]
    assert "FP313" in task["error"] and "api_base_url" in task["error"]
