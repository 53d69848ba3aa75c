"""Arize Phoenix, started by the tests as a real trace backend; spans are read back through its
REST API.

Phoenix pins dependencies the project's environment cannot share (it would downgrade the
Anthropic SDK), so it lives in a virtual environment of its own: ``.venv-phoenix`` at the
repository's root (the README's test command and ``.ci/run`` create it), or the ``phoenix``
executable ``FOLPIPE_PHOENIX`` names. Without one the tests skip loudly, and fail instead under
``CI=true`` or ``FOLPIPE_REQUIRE_PHOENIX=1`` (``.ci/run`` sets it), so CI cannot lose them.

The server listens on 127.0.0.1 only (free HTTP and gRPC ports), keeps its SQLite database in a
temporary working directory, and is told to reach nothing on the internet (no telemetry pixels,
no fonts, no downloads).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-phoenix"
REQUIRE_ENV = "FOLPIPE_REQUIRE_PHOENIX"
STARTUP_S = 300.0  # a fresh database's migrations: seconds, minutes on a loaded machine
OFFLINE = {
    "PHOENIX_TELEMETRY_ENABLED": "false",  # its web analytics pixels
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # fonts, sandbox downloads: nothing fetched
    "DO_NOT_TRACK": "1",
}


def executable() -> Path | None:
    """``FOLPIPE_PHOENIX``, else ``.venv-phoenix/bin/phoenix``; None when neither exists."""
    named = os.environ.get("FOLPIPE_PHOENIX", "").strip()
    found = Path(named) if named else VENV / "bin" / "phoenix"
    return found if found.is_file() else None


def required() -> bool:
    """Whether a missing Phoenix is a failure (CI) rather than a skip (a developer's machine)."""
    return os.environ.get(REQUIRE_ENV) == "1" or os.environ.get("CI", "").lower() == "true"


def missing() -> NoReturn:
    """Skip loudly: no Phoenix here. Fail instead where it must be (:func:`required`)."""
    message = (
        "Arize Phoenix is not installed: no .venv-phoenix/bin/phoenix and no FOLPIPE_PHOENIX "
        "(the README's test command installs it)"
    )
    if required():
        pytest.fail(f"{message}; CI=true or {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
    warnings.warn(message, stacklevel=2)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Phoenix:
    """A Phoenix process: its base URL, and (once :meth:`ready`) how long it took to start."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    started: float
    startup_s: float | None = None

    @property
    def traces_endpoint(self) -> str:
        """Its OTLP/HTTP (protobuf) traces endpoint, for ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``."""
        return f"{self.url}/v1/traces"

    def ready(self) -> Phoenix:
        """Wait (bounded) until it answers ``/healthz``; raise with its log if it never does."""
        while self.startup_s is None:
            if _up(self.url):
                self.startup_s = time.monotonic() - self.started
            elif self.process.poll() is not None or time.monotonic() - self.started > STARTUP_S:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"Phoenix did not start:\n{tail}")
            else:
                time.sleep(0.25)
        return self


@contextmanager
def phoenix(program: Path, workdir: Path) -> Iterator[Phoenix]:
    """``phoenix serve`` on 127.0.0.1 with its database in ``workdir``, started but not waited
    for (call :meth:`Phoenix.ready`: something else can start meanwhile); stopped on exit."""
    port, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHON"))}
    env |= OFFLINE | {
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
    }
    log = workdir / "phoenix.log"
    with log.open("wb") as out:
        started = time.monotonic()
        process = subprocess.Popen(
            [str(program), "serve"], env=env, cwd=workdir, stdout=out, stderr=out,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield Phoenix(f"http://127.0.0.1:{port}", process, log, started)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def spans(url: str, project: str) -> list[dict[str, Any]]:
    """Every span Phoenix stored for ``project`` (none until its first span arrived)."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        answer = httpx.get(f"{url}/v1/projects/{project}/spans", params=params, timeout=30)
        if answer.status_code == 404:
            return []
        answer.raise_for_status()
        body = answer.json()
        found += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return found


def wait_for(
    url: str,
    project: str,
    done: Callable[[list[dict[str, Any]]], bool],
    timeout: float = 90.0,
) -> list[dict[str, Any]]:
    """The project's spans once ``done(spans)`` holds (or the deadline passed): Phoenix stores
    what it receives in batches, and each process of a run exports on its own."""
    deadline = time.monotonic() + timeout
    while True:
        found = spans(url, project)
        if done(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)
