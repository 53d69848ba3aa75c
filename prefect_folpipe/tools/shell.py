"""Shell tools and shell hooks: a sandboxed subprocess (docs/tools.md, "Shell tools").

* The environment is an **allow-list** copied from the host (PATH, temp dirs, locale, terminal
  and the Windows system variables) plus the tool's arguments, nothing else: no API keys,
  tokens, passwords or user name.
* Each argument is set under its own name and, when different, its upper-case name (``query``
  -> ``$query`` and ``$QUERY``), unless the upper-case name would replace a sandbox variable
  (``path`` stays ``$path``; it never becomes ``$PATH``). Strings are passed as is, ``true`` /
  ``false`` for booleans, ``""`` for null, JSON for lists and objects. An argument named like a
  variable that changes how the shell runs (``PATH``, ``BASH_ENV``, ``IFS``, ``LD_PRELOAD``, ...)
  is refused.
* The working directory is the task folder; the script runs as ``bash -c`` (``sh`` when bash
  is missing) in a new session, so on a timeout **or a cancellation** (a Prefect task timeout
  cancels the coroutine) the whole process group gets SIGTERM, then SIGKILL, and is reaped
  before ``CancelledError`` propagates.
* Shell tools also get their arguments as a JSON object on stdin (for ``jq`` and friends).
* Shell tools and hooks get the task's context (:func:`context_env`): ``FOLPIPE_CONTEXT`` (JSON,
  when it is at most 100 kB) and always ``FOLPIPE_CONTEXT_FILE`` (a file holding the same JSON),
  with ``AGENTFLOW_CONTEXT`` / ``AGENTFLOW_CONTEXT_FILE`` as aliases (folpipe 0.1.8's names),
  and ``FOLPIPE_TASK_NAME`` (alias ``AGENTFLOW_TASK_NAME``), ``FOLPIPE_TASK_PATH``,
  ``FOLPIPE_TASK_DIR``, ``FOLPIPE_WORKFLOW_ROOT``.
* stdout and stderr are captured together, up to ``max_output`` bytes; a whole output that is
  one JSON object is merged into the context (:func:`json_object`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ToolError
from ..workflow.envnames import is_dangerous_env_name
from .watchdog import WATCHDOG

SANDBOX_ENV_NAMES = (
    "PATH",
    "PATHEXT",
    "TEMP",
    "TMP",
    "TMPDIR",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "COLORTERM",
    "SHELL",
)
FORBIDDEN_ARGUMENT_NAMES = frozenset(
    {*SANDBOX_ENV_NAMES, "BASH_ENV", "ENV", "IFS", "CDPATH", "SHELLOPTS", "BASHOPTS", "PS4",
     "PROMPT_COMMAND", "GLOBIGNORE", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
     "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT",
     "NODE_OPTIONS", "RUBYOPT"}
)  # fmt: skip
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_MAX_OUTPUT = 1_000_000
KILL_GRACE_SECONDS = 2.0
MAX_ENV_CONTEXT = 100_000
"""Above this many characters the context is passed only as a file (the kernel caps one
environment string at 128 KiB)."""


class ShellToolFailed(ToolError):
    """A shell tool exited non-zero or timed out; retried like any other tool failure."""

    code = "FP234"
    retryable = True

    def __init__(self, message: str, *, output: str = "", returncode: int | None = None) -> None:
        super().__init__(message)
        self.output = output
        self.returncode = returncode


@dataclass(frozen=True)
class ShellResult:
    """What a finished script printed and how it exited."""

    output: str
    returncode: int
    truncated: bool = False
    pid: int | None = None


def sandbox_env(
    arguments: Mapping[str, Any] | None = None,
    *,
    extra: Mapping[str, str] | None = None,
    host: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The stripped environment for a script: allow-listed host variables + arguments."""
    source = os.environ if host is None else host
    env = {name: source[name] for name in SANDBOX_ENV_NAMES if name in source}
    for name, value in (arguments or {}).items():
        _check_argument_name(name)
        text = argument_text(value)
        env[name] = text
        upper = name.upper()
        if upper != name and not _changes_sandbox(upper) and upper not in env:
            env[upper] = text
    env.update(extra or {})
    return env


def context_env(
    context: Mapping[str, Any],
    scratch: str | Path,
    *,
    task_name: str,
    task_path: str,
    task_dir: str | Path,
    workflow_root: str | Path,
) -> dict[str, str]:
    """The variables giving a script its task's context (written under ``scratch``)."""
    payload = json.dumps(dict(context), default=str, ensure_ascii=False)
    context_file = Path(scratch) / "context.json"
    context_file.write_text(payload, encoding="utf-8")
    env = {
        "FOLPIPE_CONTEXT_FILE": str(context_file),
        "FOLPIPE_TASK_NAME": task_name,
        "FOLPIPE_TASK_PATH": task_path,
        "FOLPIPE_TASK_DIR": str(Path(task_dir).absolute()),
        "FOLPIPE_WORKFLOW_ROOT": str(Path(workflow_root).absolute()),
    }
    if len(payload) <= MAX_ENV_CONTEXT:
        env["FOLPIPE_CONTEXT"] = payload
    for name in ("CONTEXT", "CONTEXT_FILE", "TASK_NAME"):
        if f"FOLPIPE_{name}" in env:
            env[f"AGENTFLOW_{name}"] = env[f"FOLPIPE_{name}"]
    return env


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a script printed as its whole output, else None."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _check_argument_name(name: str) -> None:
    if not ENV_NAME.match(name):
        raise ToolError(f"argument name {name!r} cannot be an environment variable")
    if _changes_sandbox(name) or (name != name.lower() and _changes_sandbox(name.upper())):
        raise ToolError(f"argument name {name!r} would change the sandbox; rename the parameter")
    if is_dangerous_env_name(name):  # GIT_SSH_COMMAND, http_proxy, ... in any case
        raise ToolError(
            f"argument name {name!r} would set a variable that changes how programs run; "
            "rename the parameter"
        )


def _changes_sandbox(name: str) -> bool:
    """Whether setting ``name`` would alter the sandbox or how the shell runs."""
    return name in FORBIDDEN_ARGUMENT_NAMES or name.startswith(("BASH_FUNC", "LD_", "DYLD_"))


def argument_text(value: Any) -> str:
    """How an argument value appears in the script's environment."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _shell_argv(script: str, env: Mapping[str, str]) -> list[str]:
    bash = shutil.which("bash", path=env.get("PATH"))
    return [bash, "-c", script] if bash else ["/bin/sh", "-c", script]


GATE = 'read -r -u {fd} _ || exit 125; exec {fd}<&-; exec "$@"'
"""The first thing a tool's shell does: wait for a line on a pipe (the watchdog guards the
tool's process group by then), then become the tool. EOF — this process died first — ends
it before it does anything."""


def _gated(argv: list[str]) -> tuple[list[str], int | None, int | None]:
    """``argv`` behind the gate (bash only: ``read -u`` and fd numbers above 9), with the
    pipe's ends; ``argv`` unchanged (no gate) without bash or off POSIX."""
    if os.name != "posix" or os.path.basename(argv[0]) != "bash":
        return argv, None, None
    read_end, write_end = os.pipe()
    gate = GATE.format(fd=read_end)
    return [argv[0], "-c", gate, "folpipe-tool", *argv], read_end, write_end


async def run_script(
    script: str,
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout: float | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
    stdin: bytes | None = None,
    on_start: Any = None,
) -> ShellResult:
    """Run ``script`` in a new session; kill its process group on timeout or cancellation.

    The session is guarded by the watchdog before the script starts, so it dies with this
    process even on SIGKILL (``tools.watchdog``). ``stdin`` is written to the script's standard
    input (empty when None). Raises ShellToolFailed on timeout (with the output so far).
    ``on_start(pid)`` is called once the process exists (tests use it to watch the process).
    """
    argv, gate_read, gate_write = _gated(_shell_argv(script, env))
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=os.name == "posix",
            pass_fds=() if gate_read is None else (gate_read,),
        )
        if os.name == "posix":
            WATCHDOG.guard_group(process.pid)  # dies with this process, even on SIGKILL
        if gate_write is not None:
            os.write(gate_write, b"go\n")
    finally:
        for end in (gate_read, gate_write):
            if end is not None:
                os.close(end)
    try:
        return await _communicate(process, timeout, max_output, stdin, on_start)
    finally:
        if os.name == "posix":
            WATCHDOG.release_group(process.pid)


async def _communicate(
    process: asyncio.subprocess.Process,
    timeout: float | None,
    max_output: int,
    stdin: bytes | None,
    on_start: Any,
) -> ShellResult:
    if on_start is not None:
        on_start(process.pid)
    chunks: list[bytes] = []
    reader = asyncio.ensure_future(_read_capped(process, chunks, max_output))
    feeder = asyncio.ensure_future(_feed(process, stdin))
    try:
        async with asyncio.timeout(timeout):
            truncated = await reader
            returncode = await process.wait()
            await feeder
    except TimeoutError:
        await _kill_group(process)
        output = _decode(chunks)
        raise ShellToolFailed(
            f"timed out after {timeout:g}s", output=output, returncode=process.returncode
        ) from None
    except BaseException:
        reader.cancel()
        feeder.cancel()
        await _kill_group(process)
        raise
    await _kill_group(process, stragglers_only=True)
    return ShellResult(_decode(chunks), returncode, truncated, process.pid)


async def _feed(process: asyncio.subprocess.Process, data: bytes | None) -> None:
    """Write ``data`` to the script's stdin and close it (a script may not read it at all)."""
    if data is None or process.stdin is None:
        return
    try:
        process.stdin.write(data)
        await process.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        process.stdin.close()


async def _read_capped(process: asyncio.subprocess.Process, chunks: list[bytes], cap: int) -> bool:
    """Read stdout to EOF, keeping at most ``cap`` bytes; True when output was cut."""
    assert process.stdout is not None
    kept = 0
    truncated = False
    while chunk := await process.stdout.read(65536):
        room = cap - kept
        if len(chunk) > room:
            truncated = True
        if room > 0:
            chunks.append(chunk[:room])
            kept += min(len(chunk), room)
    return truncated


def _decode(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")


async def _kill_group(
    process: asyncio.subprocess.Process, *, stragglers_only: bool = False
) -> None:
    """SIGTERM the process group, SIGKILL what is left after a grace period, reap the child.

    ``stragglers_only``: the script already exited; kill background jobs it left behind.
    """
    if os.name != "posix":  # pragma: no cover - process groups are POSIX
        if process.returncode is None:
            process.kill()
            await process.wait()
        return
    if stragglers_only:
        _signal_group(process.pid, signal.SIGKILL)
        return
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
        await asyncio.shield(asyncio.wait_for(process.wait(), KILL_GRACE_SECONDS))
    _signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.shield(process.wait())


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
