"""Shell sandbox: stripped env, cwd, output cap, process-group kill on cancel."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from prefect_folpipe.errors import ToolError
from prefect_folpipe.tools.shell import ShellToolFailed, argument_text, run_script, sandbox_env

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as gone
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def env_of(output: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in output.splitlines() if "=" in line)
    return {name: value for name, value in pairs}


async def test_secrets_in_the_parent_env_are_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "USER"):
        monkeypatch.setenv(name, "leak-me-123456")
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = sandbox_env({"query": "prefect"})
    result = await run_script("env", cwd=tmp_path, env=env)
    seen = env_of(result.output)
    assert "leak-me-123456" not in result.output
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "USER"):
        assert name not in seen
    assert seen["query"] == "prefect" and seen["QUERY"] == "prefect"
    assert seen["LANG"] == "C.UTF-8"
    assert "PATH" in seen


def test_sandbox_env_is_an_allow_list() -> None:
    host = {"PATH": "/bin", "TMPDIR": "/tmp", "HOME": "/root", "AWS_SECRET_ACCESS_KEY": "x"}
    assert sandbox_env(host=host) == {"PATH": "/bin", "TMPDIR": "/tmp"}


def test_arguments_become_env_vars_without_clobbering_the_sandbox() -> None:
    env = sandbox_env(
        {"path": "input/a.txt", "n": 3, "flag": True, "none": None, "items": ["a", 1]},
        host={"PATH": "/usr/bin"},
    )
    assert env["PATH"] == "/usr/bin"  # the 'path' argument never becomes $PATH
    assert env["path"] == "input/a.txt"
    assert (env["n"], env["N"], env["flag"], env["none"]) == ("3", "3", "true", "")
    assert env["ITEMS"] == '["a", 1]'
    assert argument_text(1.5) == "1.5"


@pytest.mark.parametrize(
    "name",
    ["PATH", "BASH_ENV", "LD_PRELOAD", "IFS", "bad-name", "Ld_preload", "ld_preload", "bash_env"],
)
def test_dangerous_argument_names_are_refused(name: str) -> None:
    with pytest.raises(ToolError):
        sandbox_env({name: "x"})


async def test_cwd_is_the_task_folder(tmp_path: Path) -> None:
    result = await run_script("pwd", cwd=tmp_path, env=sandbox_env())
    assert Path(result.output.strip()).resolve() == tmp_path.resolve()
    assert result.returncode == 0


async def test_stdout_and_stderr_are_captured_and_exit_code_kept(tmp_path: Path) -> None:
    result = await run_script("echo out; echo err >&2; exit 4", cwd=tmp_path, env=sandbox_env())
    assert result.output == "out\nerr\n"
    assert result.returncode == 4


async def test_output_is_capped(tmp_path: Path) -> None:
    script = "head -c 50000 /dev/zero | tr '\\0' x"
    result = await run_script(script, cwd=tmp_path, env=sandbox_env(), max_output=1000)
    assert len(result.output) == 1000 and result.truncated


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pids: list[int] = []
    started = time.monotonic()
    with pytest.raises(ShellToolFailed, match="timed out") as caught:
        await run_script(
            "echo started; sleep 60 & echo $! > child.pid; wait",
            cwd=tmp_path,
            env=sandbox_env(),
            timeout=1.5,
            on_start=pids.append,
        )
    assert time.monotonic() - started < 6
    assert "started" in caught.value.output
    child = int((tmp_path / "child.pid").read_text())
    assert await wait_gone(pids[0])
    assert await wait_gone(child)


async def test_cancelled_sleep_is_gone_with_its_children(tmp_path: Path) -> None:
    pids: list[int] = []
    job = asyncio.ensure_future(
        run_script(
            "sleep 60 & echo $! > child.pid; sleep 60",
            cwd=tmp_path,
            env=sandbox_env(),
            on_start=pids.append,
        )
    )
    for _ in range(500):
        if (tmp_path / "child.pid").exists() and (tmp_path / "child.pid").read_text().endswith(
            "\n"
        ):
            break
        await asyncio.sleep(0.02)
    child = int((tmp_path / "child.pid").read_text())
    assert alive(pids[0]) and alive(child)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert not alive(pids[0])  # reaped before CancelledError propagated
    assert await wait_gone(child)


async def test_term_ignoring_script_is_killed(tmp_path: Path) -> None:
    pids: list[int] = []
    job = asyncio.ensure_future(
        run_script(
            "trap '' TERM; echo ready > ready; while true; do sleep 0.1; done",
            cwd=tmp_path,
            env=sandbox_env(),
            on_start=pids.append,
        )
    )
    for _ in range(500):  # the trap is set once the script says so
        if (tmp_path / "ready").exists() and (tmp_path / "ready").read_text().endswith("\n"):
            break
        await asyncio.sleep(0.02)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await wait_gone(pids[0])


async def test_background_stragglers_are_cleaned_up_after_a_normal_exit(tmp_path: Path) -> None:
    result = await run_script(
        "sleep 60 >/dev/null 2>&1 & echo $! > bg.pid; echo done",
        cwd=tmp_path,
        env=sandbox_env(),
    )
    assert result.output == "done\n"
    assert await wait_gone(int((tmp_path / "bg.pid").read_text()))


async def test_stdin_is_fed_and_may_be_ignored(tmp_path: Path) -> None:
    read = await run_script("cat", cwd=tmp_path, env=sandbox_env(), stdin=b'{"a": 1}')
    assert read.output == '{"a": 1}'
    big = b"x" * 500_000  # larger than a pipe buffer, never read
    ignored = await run_script("echo skipped", cwd=tmp_path, env=sandbox_env(), stdin=big)
    assert ignored.output == "skipped\n"
    empty = await run_script("cat; echo end", cwd=tmp_path, env=sandbox_env())
    assert empty.output == "end\n"
