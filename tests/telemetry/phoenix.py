"""Arize Phoenix, started by the tests as a real trace backend (``FOLPIPE_PHOENIX`` names its
``phoenix`` executable; Phoenix pins dependencies the project's environment cannot share, so
it lives in a virtual environment of its own). Spans are read back through its REST API."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

STARTUP_S = 420.0  # its first start migrates a fresh database: minutes on a busy machine


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def phoenix(executable: str, workdir: Path) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 with its database in ``workdir``; yields its base URL."""
    port, grpc = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    env = {k: v for k, v in env.items() if not k.startswith(("OTEL_", "PYTHONPATH"))}
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen([executable, "serve"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _up(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"Phoenix did not start: {(workdir / 'phoenix.log').read_text()[-3000:]}"
                )
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def spans(url: str, project: str) -> list[dict[str, Any]]:
    """Every span Phoenix stored for ``project``."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        answer = httpx.get(f"{url}/v1/projects/{project}/spans", params=params, timeout=30)
        if answer.status_code == 404:  # the project exists once its first span arrived
            return []
        answer.raise_for_status()
        body = answer.json()
        found += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return found


def wait_for(url: str, project: str, name_prefix: str, timeout: float = 60.0) -> list[dict]:
    """The project's spans once one named ``name_prefix...`` is stored."""
    deadline = time.monotonic() + timeout
    while True:
        found = spans(url, project)
        if any(span["name"].startswith(name_prefix) for span in found):
            return found
        if time.monotonic() > deadline:
            return found
        time.sleep(1)
