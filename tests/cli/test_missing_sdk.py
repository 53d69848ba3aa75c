"""A provider (or mcp tools) whose SDK cannot be imported: ``folpipe run`` refuses before any
server or flow run exists, with the pip line; ``folpipe validate`` warns (FP321)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from prefect_folpipe.errors import ConfigError, Severity
from prefect_folpipe.validate import load_workflow, validate_workflow
from prefect_folpipe.workflow.sdks import check_sdks, missing_sdks

REPO = Path(__file__).resolve().parents[2]
PIP_LINE = "pip install 'prefect-folpipe[anthropic]'"

BLOCKER = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from prefect_folpipe.cli import main
main(sys.argv[1:])
"""


def claude_folder(root: Path, provider: str = "claude") -> Path:
    root.mkdir(parents=True)
    (root / "task.yaml").write_text(
        f"providers:\n  default: {provider}\n  claude: {{type: anthropic, model: claude-x}}\n"
        "  scripted: {replies: replies.yaml}\n",
        encoding="utf-8",
    )
    (root / "replies.yaml").write_text("default: hi\n", encoding="utf-8")
    (root / "instructions.md").write_text("Say hi.\n", encoding="utf-8")
    return root


@pytest.fixture
def no_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None):  # type: ignore[no-untyped-def]
        return None if name.split(".")[0] in ("anthropic", "mcp") else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_provider_sdk_is_named_with_its_extra(tmp_path, no_anthropic):
    workflow = load_workflow(claude_folder(tmp_path / "wf"))
    [missing] = missing_sdks(workflow)
    assert (missing.module, missing.provider) == ("anthropic", "claude")
    with pytest.raises(ConfigError) as caught:
        check_sdks(workflow)
    assert caught.value.code == "FP321"
    assert caught.value.hint == PIP_LINE
    assert "provider 'claude'" in str(caught.value)


def test_override_decides_which_sdk_is_needed(tmp_path, no_anthropic):
    scripted = load_workflow(claude_folder(tmp_path / "wf", provider="scripted"))
    assert missing_sdks(scripted) == []
    [missing] = missing_sdks(scripted, override="anthropic")
    assert missing.needed_by == "--provider anthropic"
    assert missing_sdks(scripted, override="claude")[0].module == "anthropic"  # a block's key
    claude = load_workflow(claude_folder(tmp_path / "wf2"))
    assert missing_sdks(claude, override="scripted") == []


def test_mcp_tools_need_the_mcp_sdk(tmp_path, no_anthropic):
    root = claude_folder(tmp_path / "wf", provider="scripted")
    with (root / "task.yaml").open("a", encoding="utf-8") as out:
        out.write("mcp_servers:\n  files: {command: python, args: [server.py]}\n")
    (root / "tools.md").write_text(
        "## search\n> type: mcp\n> server: files\n\nSearch files.\n", encoding="utf-8"
    )
    [missing] = missing_sdks(load_workflow(root))
    assert missing.module == "mcp"
    assert missing.install == "pip install 'prefect-folpipe[mcp]'"


def test_validate_warns_with_a_code_and_the_pip_line(tmp_path, no_anthropic):
    diagnostics = validate_workflow(claude_folder(tmp_path / "wf"))
    [warning] = [d for d in diagnostics if d.code == "FP321"]
    assert warning.severity == Severity.WARNING
    assert warning.hint == PIP_LINE
    assert warning.file and warning.file.endswith("task.yaml") and warning.line == 3
    assert not [d for d in diagnostics if d.severity == Severity.ERROR]


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []  # noqa: RUF012

    def _any(self) -> None:
        self.hits.append(self.path)
        self.send_response(500)
        self.end_headers()

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

    def log_message(self, *args: object) -> None:
        return None


def _folpipe(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "blocked_folpipe.py"
    script.write_text(BLOCKER.format(blocked=("anthropic",)), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PYTHONPATH"] = str(REPO)
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env.update(extra)
    return env


@pytest.mark.parametrize("provider_args", [(), ("--provider", "anthropic")])
def test_run_is_refused_before_any_server_or_flow_run(tmp_path, provider_args):
    folder = claude_folder(tmp_path / "wf", provider="claude" if not provider_args else "scripted")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.hits = []
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        proc = _folpipe(
            tmp_path, _env(tmp_path, PREFECT_API_URL=url), "run", str(folder), *provider_args
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 2, proc.stderr
    assert "FP321" in proc.stderr and PIP_LINE in proc.stderr
    assert _Recorder.hits == []  # the Prefect API was never contacted: no flow run
    assert "model call" not in proc.stdout


def test_run_without_an_api_starts_no_temporary_server(tmp_path):
    folder = claude_folder(tmp_path / "wf")
    proc = _folpipe(tmp_path, _env(tmp_path), "run", str(folder), "--json")
    assert proc.returncode == 2, proc.stderr
    assert "Prefect server" not in proc.stderr
    assert not (tmp_path / "prefect-home" / "prefect.db").exists()
    assert "FP321" in proc.stdout and PIP_LINE in proc.stdout


def test_validate_command_warns_and_exits_zero(tmp_path):
    folder = claude_folder(tmp_path / "wf")
    proc = _folpipe(tmp_path, _env(tmp_path), "validate", str(folder))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "FP321" in out and "prefect-folpipe[anthropic]" in out


def test_a_stand_in_runner_is_not_refused(tmp_path, no_anthropic):
    """``folpipe test`` runs tasks through its own runner, with stubbed tools: not checked."""
    from prefect_folpipe.compile.build import check_run_sdks
    from prefect_folpipe.compile.options import RunOptions

    workflow = load_workflow(claude_folder(tmp_path / "wf"))
    with pytest.raises(ConfigError):
        check_run_sdks(workflow, RunOptions())
    check_run_sdks(workflow, RunOptions(runner=lambda *a, **k: None))
