"""The automations ``folpipe deploy`` registers for approval gates, end to end on a real
``prefect server`` (its services on) and a process worker.

* Deadline: a tool gate with ``timeout: 5s`` and ``on_timeout`` suspends the run; nobody
  answers; the deployment's automation puts the run back to *Scheduled* by itself, the worker
  runs it, the gate takes the default (recorded as defaulted), the tool never runs and the
  run completes. Deploying twice leaves one automation; a deployment without such gates
  gets none.
* Answered: the same gate answered before its deadline completes, and the automation stays
  quiet past the deadline. The two run side by side (the ``gates`` fixture), so their waits
  overlap.
* Notice: a gate with ``notify`` names a ``CustomWebhookNotificationBlock`` pointing at a
  local HTTP receiver; when the run suspends, the notification reaches it and names the
  workflow, the task and the question.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from uuid import UUID

import httpx
import pytest
from builders import deploy_tools_md

from prefect_folpipe.compile.report._runs import list_runs

from ..runs import create_pool, folpipe, ok, run_worker_once, trigger, with_client
from ..server import PrefectServer

POOL = "folpipe-gate-automations"
pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]

TOOLS_MD = deploy_tools_md(
    '{prompt: "Deploy {{ args.version }}?", input: {approved: bool, reason: str}, '
    'timeout: 5s, on_timeout: {approved: false, reason: "no answer in 5 s"}}'
)


def _folder(root: Path, name: str, release_yaml: str, tools_md: str | None) -> Path:
    (root / "subtasks" / "10_release").mkdir(parents=True)
    (root / "task.yaml").write_text(
        f"name: {name}\nproviders:\n  default: scripted\n  scripted:\n    replies: replies.yaml\n"
    )
    calls = {"tool_calls": [{"name": "deploy", "arguments": {"version": "1.2"}}]}
    replies = [calls, "done"] if tools_md else ["done"]
    (root / "replies.yaml").write_text(json.dumps({"tasks": {"release": replies}}))
    (root / "subtasks/10_release/task.yaml").write_text(release_yaml)
    (root / "subtasks/10_release/instructions.md").write_text("Deploy 1.2.")
    if tools_md:
        (root / "subtasks/10_release/tools.md").write_text(tools_md)
    return root


def _poll(read: Any, done: Any, timeout: float, what: str) -> Any:
    """``read()`` until ``done(value)`` (bounded, no fixed sleep), else fail naming ``what``."""
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.25)
        value = read()
    assert done(value), f"{what}: still {value!r} after {timeout:g} s"
    return value


def _run(server: PrefectServer, flow_run_id: UUID) -> Any:
    async def read(client: Any) -> Any:
        return await client.read_flow_run(flow_run_id)

    return with_client(server, read)


def _automations(server: PrefectServer, prefix: str) -> list[Any]:
    async def read(client: Any) -> list[Any]:
        return [a for a in await client.read_automations() if a.name.startswith(prefix)]

    return with_client(server, read)


def _fired(server: PrefectServer, prefix: str) -> list[str]:
    """What the automations named ``prefix...`` did, as the server recorded it: their
    ``prefect.automation.triggered`` and ``prefect.automation.action.*`` events."""
    ids = [f"prefect.automation.{a.id}" for a in _automations(server, prefix)]
    body = {"filter": {"resource": {"id": ids}}, "limit": 50}
    found = httpx.post(f"{server.url}/events/filter", json=body, timeout=30).json()
    acted = ("prefect.automation.triggered", "prefect.automation.action.")
    return [event["event"] for event in found["events"] if event["event"].startswith(acted)]


def _artifacts_text(server: PrefectServer, flow_run_id: UUID) -> str:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async def read(client: Any) -> str:
        only = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        found = await client.read_artifacts(artifact_filter=only)
        return "\n".join(json.dumps(a.data, default=str) for a in found)

    return with_client(server, read)


@pytest.fixture(scope="module")
def pool(prefect_server: PrefectServer) -> str:
    create_pool(prefect_server, POOL)  # `prefect work-pool create POOL --type process`
    return POOL


ANSWERED_DEADLINE_S = 10
"""The gate's deadline in the answered scenario: time to answer after the run suspended (about
two seconds on a quiet machine)."""
QUIET_S = 4
"""How long past that deadline the answered run is watched: a deadline automation fires
about a second after the deadline on the test server (proactive evaluation every second)."""


@dataclass
class Gates:
    """The two deadline scenarios, run side by side so their waits overlap: ``deadline``
    (nobody answers) and ``answered`` (answered at once), each a folder, its flow run, the
    run's state when it suspended and what happened after."""

    deployed: Any
    deadline: Path
    deadline_run: UUID
    deadline_suspended: Any
    resumed: str
    answered: Path
    answered_run: UUID
    answered_suspended: Any
    answered_after: float


@pytest.fixture(scope="module")
def gates(
    prefect_server: PrefectServer, pool: str, tmp_path_factory: pytest.TempPathFactory
) -> Gates:
    """Both deployed (the deadline one twice: deploying again must replace its automation),
    both triggered and run by one worker until they suspend; the answered one is answered at
    once; once the deadline one was put back by its automation, one worker runs both on."""
    server, root = prefect_server, tmp_path_factory.mktemp("gates")
    deadline = _folder(root / "deadline", "deadline", "name: release\n", TOOLS_MD)
    for _ in range(2):
        deployed = ok(folpipe(server, "deploy", deadline, "--name", "d", "--pool", pool, "--json"))
    tools = TOOLS_MD.replace("timeout: 5s", f"timeout: {ANSWERED_DEADLINE_S}s")
    answered = _folder(root / "answered", "answered", "name: release\n", tools)
    ok(folpipe(server, "deploy", answered, "--name", "a", "--pool", pool))
    deadline_run, answered_run = trigger(server, "deadline/d"), trigger(server, "answered/a")
    run_worker_once(server, pool, root / "worker-1.log")
    answered_suspended = _run(server, answered_run).state
    if answered_suspended.name == "Suspended":
        ok(folpipe(server, "approvals", "answer", str(answered_run), "approved=yes", "reason=go"))
    answered_after = time.time() - answered_suspended.timestamp.timestamp()
    deadline_suspended = _run(server, deadline_run).state
    # nobody answers the other: its automation schedules it again once the deadline passed
    resumed = _poll(
        lambda: _run(server, deadline_run).state.name,
        lambda name: name != "Suspended",
        120,
        "the suspended run past its deadline",
    )
    run_worker_once(server, pool, root / "worker-2.log")
    return Gates(
        json.loads(deployed.stdout), deadline, deadline_run, deadline_suspended, resumed,
        answered, answered_run, answered_suspended, answered_after,
    )  # fmt: skip


def test_a_gate_past_its_deadline_continues_by_itself_with_the_default(
    prefect_server: PrefectServer, gates: Gates
) -> None:
    server, folder, flow_run_id = prefect_server, gates.deadline, gates.deadline_run
    assert gates.deployed["automations"] == ["deadline/d: approval deadlines"]
    (automation,) = _automations(server, "deadline/d: ")
    assert automation.actions[0].type == "change-flow-run-state"
    assert gates.deadline_suspended.name == "Suspended", gates.deadline_suspended
    assert gates.resumed in {"Resuming", "Scheduled", "Pending", "Running"}, gates.resumed
    done = _poll(
        lambda: _run(server, flow_run_id).state,
        lambda state: state.is_final(),
        60,
        "the resumed run",
    )
    assert done.name == "Completed", done
    assert not (folder / "subtasks/10_release/deployed.txt").exists()  # declined by default
    # recorded as defaulted, not as a person's answer: run record, status, the run's artifacts
    latest = max(list_runs(folder), key=lambda r: str(r.get("started_at")))
    (line,) = latest["approvals"]
    assert 'approved=false, reason="no answer in 5 s" (default at deadline' in line, line
    status = json.loads(ok(folpipe(server, "status", folder, "--json")).stdout)
    assert "default at deadline" in json.dumps(status)
    assert "default at deadline" in _artifacts_text(server, flow_run_id)
    assert "prefect.automation.action.executed" in _fired(server, "deadline/d: ")


def test_an_answer_before_the_deadline_keeps_the_automation_quiet(
    prefect_server: PrefectServer, gates: Gates
) -> None:
    server, folder, flow_run_id = prefect_server, gates.answered, gates.answered_run
    suspended = gates.answered_suspended
    assert suspended.name == "Suspended", suspended
    answered_after = gates.answered_after
    assert answered_after < ANSWERED_DEADLINE_S, f"answered {answered_after:.1f} s after"
    assert _run(server, flow_run_id).state.name == "Completed"
    assert (folder / "subtasks/10_release/deployed.txt").read_text() == "1.2"
    # past the deadline (and proactive evaluations: the test server's run every second, a
    # missed deadline fires about a second after it), the finished run stays finished: the
    # answer's `Resuming` event told the automation the gate was left
    quiet_until = suspended.timestamp.timestamp() + ANSWERED_DEADLINE_S + QUIET_S
    while time.time() < quiet_until:
        assert _run(server, flow_run_id).state.name == "Completed"
        time.sleep(0.5)
    (line,) = max(list_runs(folder), key=lambda r: str(r.get("started_at")))["approvals"]
    assert "(Prefect UI" in line, line
    assert _fired(server, "answered/a: ") == []


def test_a_deployment_without_deadline_defaults_gets_no_automation(
    prefect_server: PrefectServer, pool: str, tmp_path: Path
) -> None:
    gate = 'approval: {prompt: "Ship?", timeout: 1h}\n'
    folder = _folder(tmp_path / "plain", "plain", f"name: release\n{gate}", None)
    deployed = ok(
        folpipe(prefect_server, "deploy", folder, "--name", "p", "--pool", pool, "--json")
    )
    assert json.loads(deployed.stdout)["automations"] == []
    assert _automations(prefect_server, "plain/p: ") == []


class _Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).received.append(json.loads(body or b"{}"))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An HTTP receiver on 127.0.0.1 that keeps every JSON body posted to it."""
    _Receiver.received = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/hook", _Receiver.received
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_waiting_gate_is_announced_through_a_notification_block(
    prefect_server: PrefectServer,
    pool: str,
    tmp_path: Path,
    receiver: tuple[str, list[dict[str, Any]]],
) -> None:
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    url, received = receiver

    async def save(client: Any) -> None:
        block = CustomWebhookNotificationBlock(
            name="approvals",
            url=url,
            json_data={"subject": "{{subject}}", "body": "{{body}}"},
            allow_private_urls=True,
        )
        await block.save("ops-hook", overwrite=True, client=client)

    with_client(prefect_server, save)
    gate = 'approval: {prompt: "Ship release 1.2 to production?", notify: ops-hook}\n'
    folder = _folder(tmp_path / "noticed", "noticed", f"name: release\n{gate}", None)
    deployed = ok(
        folpipe(prefect_server, "deploy", folder, "--name", "n", "--pool", pool, "--json")
    )
    assert json.loads(deployed.stdout)["automations"] == ["noticed/n: approval notice via ops-hook"]
    flow_run_id = trigger(prefect_server, "noticed/n")
    run_worker_once(prefect_server, pool, tmp_path / "worker.log")
    assert _run(prefect_server, flow_run_id).state.name == "Suspended"
    (message,) = _poll(lambda: list(received), bool, 90, "the notification")
    text = f"{message['subject']}\n{message['body']}"
    assert "noticed" in text and "release" in text, text
    assert "Ship release 1.2 to production?" in text, text
    assert str(flow_run_id) in text, text  # the link to the run in the UI
