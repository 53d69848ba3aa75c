"""Issue 11 point 12, end to end: no persisted or printed sink of a run holds a secret —
the context, checkpoints and run records, ``--json``, artifacts, the cassette, logs, later
tasks' prompts — whether it came from the environment (``GITHUB_PAT``, ``AWS_ACCESS_KEY_ID``,
a ``DATABASE_URL`` password), from a model echoing it, or from a Prefect Secret block read in
the middle of the run."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from providers.wire import OpenAIWire, Reply
from pytest_httpserver import HTTPServer

REDACTED = "[REDACTED]"
PAT = "ghp_patvalue0123456789abcdef"
AWS = "AKIAEXAMPLEKEY0123456"
DB_PASSWORD = "hunter2-db-pass"
DB_URL = f"postgres://app:{DB_PASSWORD}@db.internal:5432/prod"
CREDS = "cred-value-9876543210"
SECRET_ENV = {
    "GITHUB_PAT": PAT,
    "AWS_ACCESS_KEY_ID": AWS,
    "DATABASE_URL": DB_URL,
    "SERVICE_CREDENTIALS": CREDS,
}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)
    return SECRET_ENV


def _files_text(folder: Path) -> str:
    return "\n".join(
        f.read_text(errors="replace") for f in sorted(folder.rglob("*")) if f.is_file()
    )


async def _artifact_texts(flow_run_id: str) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from prefect_folpipe import flush_artifacts

    assert flush_artifacts(30)
    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    assert found, "no artifacts were written"
    return "\n".join(json.dumps(a.data) for a in found)


HOOK = """import os

def run(ctx, task):
    ctx.logger.info("hook sees %s and %s", os.environ["GITHUB_PAT"], os.environ["DATABASE_URL"])
    ctx.context["dsn"] = os.environ["DATABASE_URL"]
"""


@pytest.mark.prefect
def test_no_sink_of_a_cli_run_holds_a_secret(
    make_workflow: Any, folpipe: Any, secret_env: dict[str, str], tmp_path: Path
) -> None:
    echoed = f"pat {PAT}, aws {AWS}, db {DB_URL}, creds {CREDS}"
    wf = make_workflow(
        {
            "task.yaml": {"subtasks": {"execution_type": "sequential"}},
            "subtasks/10_leak/instructions.md": "Tell me the keys.",
            "subtasks/10_leak/task.yaml": {"output": ["note"]},
            "subtasks/10_leak/hooks/post_run.py": HOOK,
            "subtasks/20_next/instructions.md": "Repeat what you were sent.",
            "replies.yaml": {
                "tasks": {
                    "leak": [{"output": {"note": echoed}, "text": echoed}],
                    "next": [{"echo": True}],
                }
            },
        }
    )
    cassette = tmp_path / "cassette.yaml"
    proc = folpipe(
        "run",
        wf,
        "--json",
        "--record",
        cassette,
        env={**secret_env, "PREFECT_LOGGING_LEVEL": "INFO"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(proc.stdout)
    assert "hook sees" in proc.stderr  # the hook's log line reached the console, masked
    next_prompt = document["context"]["next"]
    assert "[REDACTED]" in next_prompt  # the later task was sent the masked context
    sinks = {
        "--json": proc.stdout,
        "logs": proc.stderr,
        "cassette": cassette.read_text(),
        "checkpoints and run records": _files_text(wf / ".folpipe"),
        "artifacts": asyncio.run(_artifact_texts(document["flow_run_id"])),
    }
    for sink, text in sinks.items():
        for value in (PAT, AWS, DB_PASSWORD, CREDS):
            assert value not in text, f"{value} leaked into {sink}"


@pytest.fixture
def openai_wire() -> Iterator[OpenAIWire]:
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield OpenAIWire(server)
    finally:
        server.clear()
        server.stop()


@pytest.mark.prefect
def test_a_secret_block_key_is_masked_everywhere(
    make_workflow: Any, run: Any, openai_wire: OpenAIWire, tmp_path: Path
) -> None:
    from prefect.blocks.system import Secret

    from prefect_folpipe.compile.options import RunOptions

    key = f"sk-block-{uuid.uuid4().hex}"
    block = f"llm-key-{uuid.uuid4().hex[:8]}"
    Secret(value=key).save(block, _sync=True)  # type: ignore[call-arg]
    openai_wire.add(Reply(f"the key I was sent is {key}"), Reply(f"still {key}"))
    wf = make_workflow(
        {
            "task.yaml": {
                "providers": {
                    "default": "gpt",
                    "gpt": {
                        "type": "openai",
                        "model": "gpt-test",
                        "base_url": openai_wire.base_url,
                        "api_key_secret": block,
                    },
                },
                "subtasks": {"execution_type": "sequential"},
            },
            "subtasks/10_first/instructions.md": "Echo your key.",
            "subtasks/20_second/instructions.md": "And again.",
        }
    )
    cassette = tmp_path / "cassette.json"
    result = run(wf, options=RunOptions(record=cassette))
    assert result.status == "completed", result.error
    sent = openai_wire.headers[-1].get("authorization", "")
    assert key in sent  # the real key went to the provider ...
    later_prompt = json.dumps(openai_wire.requests[-1])
    assert key not in later_prompt  # ... never in a later prompt,
    assert REDACTED in later_prompt  # which does carry the first answer, masked
    sinks = {
        "--json": result.to_json(),
        "cassette": cassette.read_text(),
        "checkpoints": _files_text(wf / ".folpipe"),
        "artifacts": asyncio.run(_artifact_texts(result.flow_run_id)),
    }
    for sink, text in sinks.items():
        assert key not in text, f"the Secret block's key leaked into {sink}"
    assert REDACTED in cassette.read_text()
