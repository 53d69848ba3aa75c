"""The background writer: runs do not wait for their reports, flush() and exit do."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import pytest

from prefect_folpipe.compile.report._background import BackgroundWriter

pytestmark = pytest.mark.prefect


def test_flush_waits_for_every_write_and_a_failing_write_does_not_block(prefect_harness):
    writer = BackgroundWriter(workers=2)
    done: list[int] = []
    threads: set[str] = set()

    def slow(number: int) -> Any:
        async def write(client: Any) -> None:
            assert hasattr(client, "create_artifact")  # a real Prefect client
            await asyncio.sleep(0.05)
            threads.add(threading.current_thread().name)
            done.append(number)

        return write

    async def broken(_client: Any) -> None:
        raise RuntimeError("API said no")

    for number in range(6):
        writer.submit(slow(number), f"write {number}")
    writer.submit(broken, "broken write")
    assert writer.flush(10)
    assert sorted(done) == list(range(6))
    assert writer.flush(0)  # nothing left
    assert threads == {"folpipe-writer"}


def test_flush_times_out_when_a_write_hangs(prefect_harness):
    writer = BackgroundWriter(workers=1)
    release = threading.Event()

    async def hang(_client: Any) -> None:
        while not release.is_set():
            await asyncio.sleep(0.01)

    writer.submit(hang, "hanging write")
    assert writer.flush(0.2) is False
    release.set()
    assert writer.flush(5)


def test_writes_wait_while_a_run_is_busy_but_not_when_flushed(prefect_harness):
    writer = BackgroundWriter(workers=1)
    written_at: list[float] = []

    async def write(_client: Any) -> None:
        written_at.append(time.monotonic())

    writer.touch(5.0)
    submitted = time.monotonic()
    writer.submit(write, "held write")
    time.sleep(0.2)
    assert written_at == [], "written while the run was busy"
    assert writer.flush(4)  # flushing does not wait for the quiet period (5 s)
    assert written_at[0] - submitted < 4.5

    writer = BackgroundWriter(workers=1)  # a writer without that 5 s hold
    writer.touch(0.5)
    submitted = time.monotonic()
    writer.submit(write, "second write")
    deadline = time.monotonic() + 5
    while len(written_at) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert written_at[1] - submitted >= 0.45  # held until the run went quiet


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_starts_its_own_writer_thread(prefect_harness):
    writer = BackgroundWriter(workers=1)
    done: list[str] = []

    async def write(_client: Any) -> None:
        done.append("written")

    writer.submit(write, "parent write")
    assert writer.flush(10) and done == ["written"]
    pid = os.fork()
    if pid == 0:  # the child: the parent's writer thread does not exist here
        ok = False
        try:
            writer.submit(write, "child write")
            ok = writer.flush(10) and done == ["written", "written"]
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
