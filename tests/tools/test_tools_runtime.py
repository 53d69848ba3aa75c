"""Toolbox: definitions, dispatch, validation, retries, time-outs, truncation, redaction."""

from __future__ import annotations

import asyncio
import dataclasses
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from prefect_folpipe.loader.tools._modules import discover_tools
from prefect_folpipe.providers import ToolCall
from prefect_folpipe.tools.attempts import result_text
from prefect_folpipe.tools.toolbox import RUNNERS, Toolbox, register_runner
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, ToolSpec, Workflow

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tools"

TOOLS_MD = """
## lookup
Read a value from the context.

```python
def lookup(ctx: ToolContext, key: str) -> dict:
    return {"key": key, "value": ctx.get(key), "task_dir": str(ctx.task_dir)}
```

## explode
> retries: 2

Always fails.

```python
def explode(ctx: ToolContext) -> str:
    ctx.context["explode_calls"] = ctx.context.get("explode_calls", 0) + 1
    raise ValueError("boom")
```

## flaky
> retries: 3

Fails once, then works.

```python
def flaky(ctx: ToolContext) -> str:
    ctx.context["flaky_calls"] = ctx.context.get("flaky_calls", 0) + 1
    if ctx.context["flaky_calls"] == 1:
        raise ConnectionError("transient")
    return "recovered"
```

## peek
> retries: 5

Read any file (the sandbox decides).

```python
def peek(ctx: ToolContext, path: str) -> str:
    ctx.context["peek_calls"] = ctx.context.get("peek_calls", 0) + 1
    return ctx.resolve_path(path).read_text()
```

## nap
> timeout: 0.3

Sleep asynchronously.

```python
import asyncio
import dataclasses

async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"slept {seconds}"
```

## linger
Sleep asynchronously, without a tool time-out.

```python
import asyncio
import dataclasses

async def linger(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "lingered"
```

## doze
Sleep in a thread.

```python
import time

def doze(seconds: float) -> str:
    time.sleep(seconds)
    return "dozed"
```

## echo
Echo text back.

```python
def echo(text: str) -> str:
    return text
```

## shout
> type: shell
> params: words (str)

Upper-case words.

```bash
echo "$WORDS" | tr a-z A-Z
```

## fail_sh
> type: shell

Fails.

```bash
echo "partial output"; echo "bad thing" >&2; exit 3
```

## web_browser
> type: reference

Browse the web. You already have a browser.
"""


def make_task(folder: Path, tools: list[ToolSpec], **settings: Any) -> tuple[Task, Workflow]:
    task = Task(
        name="t",
        path="t",
        folder=folder,
        config=TaskConfig(),
        settings=EffectiveSettings(**settings),
        tools=tuple(tools),
    )
    return task, Workflow(root=task, root_dir=folder.parent, name="wf")


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "tools.md").write_text(textwrap.dedent(TOOLS_MD))
    (folder / "input").mkdir()
    (folder / "input" / "data.txt").write_text("hello from input")
    (folder / ".env").write_text("SECRET=1")
    return folder


def toolbox_for(folder: Path, context: dict[str, Any] | None = None, **settings: Any) -> Toolbox:
    tools, diagnostics = discover_tools(folder, owner="t")
    assert [d for d in diagnostics if d.severity == "error" and d.code != "FP214"] == []
    task, workflow = make_task(folder, tools, **settings)
    return Toolbox(task, workflow, context if context is not None else {})


async def call(box: Toolbox, name: str, **arguments: Any):
    return await box.call(ToolCall(id=f"id-{name}", name=name, arguments=arguments))


async def test_definitions_and_reference_text(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    names = [d.name for d in box.definitions()]
    assert "web_browser" not in names
    assert {"lookup", "shout", "echo"} <= set(names)
    lookup = next(d for d in box.definitions() if d.name == "lookup")
    assert lookup.description == "Read a value from the context."
    assert lookup.parameters["required"] == ["key"]
    text = box.reference_text()
    assert "web_browser: Browse the web. You already have a browser." in text
    task, workflow = make_task(task_dir, [])
    assert Toolbox(task, workflow, {}).reference_text() == ""


async def test_python_tool_gets_context_and_returns_json(task_dir: Path) -> None:
    box = toolbox_for(task_dir, {"city": "Oslo"})
    result = await call(box, "lookup", key="city")
    assert not result.is_error
    assert result.call_id == "id-lookup" and result.name == "lookup"
    assert '"value": "Oslo"' in result.content
    assert str(task_dir.absolute()) in result.content


async def test_module_tools_sync_and_async() -> None:
    box = toolbox_for(FIXTURES / "module_task")
    found = await call(box, "search_api", query="  Prefect   Flows ")
    ranked = await call(box, "rank", items=["b", "c", "a"], order="desc")
    assert found.content == '{"query": "prefect flows", "limit": 10}'
    assert ranked.content == '["c", "b", "a"]'


async def test_unknown_tool_names_the_available_ones(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    result = await call(box, "lokup", key="x")
    assert result.is_error
    assert result.content.startswith("Error (FP230): unknown tool 'lokup'")
    assert "Available tools: doze, echo," in result.content
    assert "did you mean 'lookup'?" in result.content


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "'key' is a required property"),
        ({"key": 3}, "key: 3 is not of type 'string'"),
        ({"key": "a", "other": 1}, "Additional properties are not allowed"),
    ],
)
async def test_invalid_arguments_are_reported(
    task_dir: Path, arguments: dict[str, Any], fragment: str
) -> None:
    box = toolbox_for(task_dir)
    result = await box.call(ToolCall(id="1", name="lookup", arguments=arguments))
    assert result.is_error
    assert result.content.startswith("Error (FP231): invalid arguments for 'lookup'")
    assert fragment in result.content


async def test_non_mapping_arguments(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    result = await box.call(ToolCall(id="1", name="echo", arguments=["x"]))  # type: ignore[arg-type]
    assert result.is_error and "FP231" in result.content


async def test_exception_is_retried_then_surfaced_without_traceback(task_dir: Path) -> None:
    context: dict[str, Any] = {}
    box = toolbox_for(task_dir, context)
    result = await call(box, "explode")
    assert context["explode_calls"] == 3  # retries: 2 -> three attempts
    assert result.is_error
    assert result.content == (
        "Error (FP232, after 3 attempts): tool 'explode' failed: ValueError: boom"
    )
    assert "Traceback" not in result.content
    assert box.log[-1].attempts == 3 and box.log[-1].code == "FP232"


async def test_settings_tool_retries_apply_without_metadata(tmp_path: Path) -> None:
    (tmp_path / "tools.md").write_text(
        "## bad\n\n```python\ndef bad(ctx: ToolContext) -> str:\n"
        "    ctx.context['n'] = ctx.context.get('n', 0) + 1\n    raise KeyError('k')\n```\n"
    )
    context: dict[str, Any] = {}
    box = toolbox_for(tmp_path, context, tool_retries=1)
    result = await call(box, "bad")
    assert context["n"] == 2
    assert "KeyError" in result.content


async def test_transient_failure_recovers(task_dir: Path) -> None:
    context: dict[str, Any] = {}
    result = await call(toolbox_for(task_dir, context), "flaky")
    assert (result.is_error, result.content, context["flaky_calls"]) == (False, "recovered", 2)


async def test_sandbox_violation_is_an_error_result_and_never_retried(task_dir: Path) -> None:
    context: dict[str, Any] = {}
    box = toolbox_for(task_dir, context)
    allowed = await call(box, "peek", path="input/data.txt")
    denied = await call(box, "peek", path=".env")
    assert allowed.content == "hello from input"
    assert denied.is_error
    assert denied.content.startswith("Error (FP201): tool 'peek': sandbox violation")
    assert context["peek_calls"] == 2  # one successful call + one denied attempt


async def test_timeout_is_an_error_result(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    started = time.perf_counter()
    result = await call(box, "nap", seconds=5)
    assert time.perf_counter() - started < 2
    assert result.is_error
    assert result.content == "Error (FP233): tool 'nap' timed out after 0.3s"


async def test_settings_tool_timeout_applies(task_dir: Path) -> None:
    box = toolbox_for(task_dir, tool_timeout=0.2)
    result = await call(box, "doze", seconds=1)
    assert result.is_error and "timed out after 0.2s" in result.content


async def test_result_is_truncated_with_a_marker(task_dir: Path) -> None:
    box = toolbox_for(task_dir, tool_result_max_chars=100)
    result = await call(box, "echo", text="x" * 250)
    assert result.content == "x" * 100 + "\n[... truncated 150 of 250 characters]"


async def test_results_are_redacted_unless_allowed(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", "sk-live-0123456789")
    text = "files: .env config/app.env keys/server.pem key=sk-live-0123456789"
    redacted = await call(toolbox_for(task_dir), "echo", text=text)
    assert redacted.content == "files: [REDACTED] [REDACTED] [REDACTED] key=[REDACTED]"
    allowed = await call(toolbox_for(task_dir, allow_sensitive_files=True), "echo", text=text)
    assert allowed.content == "files: .env config/app.env keys/server.pem key=[REDACTED]"


async def test_error_results_are_redacted_too(tmp_path: Path) -> None:
    (tmp_path / "tools.md").write_text(
        "## opener\n\n```python\ndef opener() -> str:\n"
        "    raise FileNotFoundError('/srv/app/.env')\n```\n"
    )
    result = await call(toolbox_for(tmp_path), "opener")
    assert result.content.endswith("FileNotFoundError: [REDACTED]")


MEETING_TOOLS = """
## meet
Wait (asynchronously) until `expect` calls have arrived.

```python
import asyncio
import dataclasses

async def meet(ctx: ToolContext, expect: int) -> str:
    ctx.context["async"] = ctx.context.get("async", 0) + 1
    for _ in range(600):
        if ctx.context["async"] >= expect:
            return "met"
        await asyncio.sleep(0.05)
    return "alone"
```

## meet_in_thread
Wait (in a worker thread) until `expect` calls have arrived.

```python
import time

def meet_in_thread(ctx: ToolContext, expect: int) -> str:
    ctx.context["threads"] = ctx.context.get("threads", 0) + 1
    for _ in range(600):
        if ctx.context["threads"] >= expect:
            return "met"
        time.sleep(0.05)
    return "alone"
```
"""


async def test_concurrent_calls_overlap(tmp_path: Path) -> None:
    """Calls of one turn run at once: each waits for its peers, which only a concurrent run
    lets arrive (one after the other, the first would wait 30 s and answer "alone")."""
    (tmp_path / "tools.md").write_text(textwrap.dedent(MEETING_TOOLS))
    box = toolbox_for(tmp_path)
    results = await asyncio.gather(
        box.call(ToolCall("a", "meet", {"expect": 2})),
        box.call(ToolCall("b", "meet", {"expect": 2})),
        box.call(ToolCall("c", "meet_in_thread", {"expect": 2})),
        box.call(ToolCall("d", "meet_in_thread", {"expect": 2})),
    )
    assert [r.call_id for r in results] == ["a", "b", "c", "d"]
    assert [r.content for r in results] == ["met"] * 4
    assert sorted(record.call_id for record in box.log) == ["a", "b", "c", "d"]


async def test_reference_tool_is_not_executable(task_dir: Path) -> None:
    result = await call(toolbox_for(task_dir), "web_browser")
    assert result.is_error
    assert result.content.startswith("Error (FP235): 'web_browser' is a reference tool")


async def test_shell_tool_via_toolbox(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    ok = await call(box, "shout", words="hello")
    failed = await call(box, "fail_sh")
    assert (ok.is_error, ok.content) == (False, "HELLO\n")
    assert failed.is_error
    assert failed.content.startswith("Error (FP234): tool 'fail_sh' exited with status 3")
    assert "partial output" in failed.content and "bad thing" in failed.content


async def test_cancellation_propagates(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    pending = asyncio.ensure_future(call(box, "linger", seconds=30))
    await asyncio.sleep(0.05)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending


async def test_log_records_each_call(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    await call(box, "echo", text="hi")
    await call(box, "nope")
    first, second = (record.to_dict() for record in box.log)
    assert first["name"] == "echo" and first["arguments"] == {"text": "hi"}
    assert first["result"] == "hi" and first["is_error"] is False
    assert first["duration_s"] >= 0
    assert second["is_error"] is True and second["code"] == "FP230"


async def test_custom_runner_registration_and_missing_runner(tmp_path: Path) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def custom(spec: ToolSpec, arguments: Any, ctx: Any) -> dict[str, Any]:
        seen.append((spec.name, dict(arguments)))
        return {"ok": True}

    def spec(kind: str) -> ToolSpec:
        return ToolSpec(
            name=f"{kind}_tool",
            kind=kind,  # type: ignore[arg-type]
            description="",
            parameters={"type": "object", "properties": {"q": {"type": "string"}}},
            source_file="x",
        )

    register_runner("custom_kind_for_test", custom)
    try:
        task, workflow = make_task(tmp_path, [spec("custom_kind_for_test"), spec("nokind")])
        box = Toolbox(task, workflow, {})
        ok = await box.call(ToolCall("1", "custom_kind_for_test_tool", {"q": "x"}))
        missing = await box.call(ToolCall("2", "nokind_tool", {}))
    finally:
        RUNNERS.pop("custom_kind_for_test")
    assert ok.content == '{"ok": true}' and seen == [("custom_kind_for_test_tool", {"q": "x"})]
    assert missing.is_error and missing.content.startswith("Error (FP236)")


async def test_pydantic_model_arguments_are_bound(tmp_path: Path) -> None:
    (tmp_path / "tools.md").write_text(
        "## area\n\n```python\nfrom pydantic import BaseModel\n\n"
        "class Box(BaseModel):\n    w: int\n    h: int = 1\n\n"
        "def area(shape: Box) -> int:\n    return shape.w * shape.h\n```\n"
    )
    box = toolbox_for(tmp_path)
    assert (await call(box, "area", shape={"w": 3, "h": 4})).content == "12"
    bad = await call(box, "area", shape={"h": 4})
    assert bad.is_error and "FP231" in bad.content


async def test_http_clients_are_closed(task_dir: Path) -> None:
    box = toolbox_for(task_dir)
    client, aclient = box.ctx.http, box.ctx.ahttp
    closed: list[str] = []

    async def note() -> None:
        closed.append("callback")

    box.ctx.on_close(note)
    async with box:
        pass
    assert client.is_closed and aclient.is_closed and closed == ["callback"]


def test_result_text_forms() -> None:
    from dataclasses import dataclass

    from pydantic import BaseModel

    class M(BaseModel):
        a: int

    @dataclass
    class D:
        b: str

    assert result_text("s") == "s"
    assert result_text(b"bytes") == "bytes"
    assert result_text(None) == "null"
    assert result_text({"x": [1, 2]}) == '{"x": [1, 2]}'
    assert result_text(M(a=1)) == '{"a": 1}'
    assert result_text(D(b="x")) == '{"b": "x"}'
    assert result_text({1, 2}) in ('"{1, 2}"', "{1, 2}")


SLEEPER_MD = """
## sleeper
> type: shell
> timeout: 1.5

Sleep for a long time.

```bash
echo $$ > sleeper.pid
sleep 60
```
"""


def _gone(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def _pid_file(folder: Path) -> int:
    for _ in range(500):
        text = (folder / "sleeper.pid").read_text() if (folder / "sleeper.pid").exists() else ""
        if text.endswith("\n"):
            return int(text)
        await asyncio.sleep(0.02)
    raise AssertionError("the shell tool never started")


async def test_cancelled_shell_tool_process_is_gone(tmp_path: Path) -> None:
    (tmp_path / "tools.md").write_text(SLEEPER_MD.replace("> timeout: 1.5\n", ""))
    box = toolbox_for(tmp_path)
    pending = asyncio.ensure_future(call(box, "sleeper"))
    pid = await _pid_file(tmp_path)
    assert not _gone(pid)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert _gone(pid)


async def test_timed_out_shell_tool_process_is_gone(tmp_path: Path) -> None:
    (tmp_path / "tools.md").write_text(SLEEPER_MD)
    result = await call(toolbox_for(tmp_path), "sleeper")
    assert result.content == "Error (FP233): tool 'sleeper' timed out after 1.5s"
    assert _gone(int((tmp_path / "sleeper.pid").read_text()))


async def test_values_of_declared_env_vars_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_KEY", "plain-named-secret-42")  # not a secret-looking name
    (tmp_path / "tools.md").write_text(
        "## leak\n> env: [SERVICE_KEY]\n\n```python\nimport os\n\n"
        "def leak() -> str:\n    return 'got ' + os.environ['SERVICE_KEY']\n```\n"
    )
    result = await call(toolbox_for(tmp_path), "leak")
    assert result.content == "got [REDACTED]"


async def test_shell_tool_reads_arguments_as_json_on_stdin(tmp_path: Path) -> None:
    (tmp_path / "tools.md").write_text(
        "## stdin_echo\n> type: shell\n> params: words (str), n (int)\n\n```bash\ncat\n```\n"
    )
    result = await call(toolbox_for(tmp_path), "stdin_echo", words="hi there", n=2)
    assert result.content == '{"words": "hi there", "n": 2}'


async def test_replaced_spec_gets_a_fresh_validator(task_dir: Path) -> None:
    import dataclasses

    box = toolbox_for(task_dir)
    assert not (await call(box, "echo", text="a")).is_error
    spec = box.tools["echo"]
    box.tools["echo"] = dataclasses.replace(
        spec,
        parameters={"type": "object", "properties": {"text": {"type": "integer"}}},
    )
    result = await call(box, "echo", text="a")
    assert result.is_error and "FP231" in result.content


async def test_invalid_schema_is_reported(tmp_path: Path) -> None:
    bad = ToolSpec(
        name="bad_schema",
        kind="python",
        description="",
        parameters={"type": "object", "properties": {"x": {"type": "nonsense"}}},
        source_file="x",
    )
    task, workflow = make_task(tmp_path, [bad])
    result = await Toolbox(task, workflow, {}).call(ToolCall("1", "bad_schema", {"x": 1}))
    assert result.is_error and "parameter schema is invalid" in result.content


def test_a_parameter_schema_is_checked_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tools repeat schemas: the metaschema check (the cost of a first call) runs once for
    each distinct schema, whichever tool or task brings it; a bad schema stays reported."""
    from jsonschema import Draft202012Validator

    from prefect_folpipe.tools import attempts

    checks: list[Any] = []
    real = Draft202012Validator.check_schema
    monkeypatch.setattr(
        Draft202012Validator,
        "check_schema",
        classmethod(lambda cls, schema: checks.append(schema) or real(schema)),
    )
    monkeypatch.setattr(attempts, "_CHECKED", {})
    shape = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    specs = [
        ToolSpec(
            name=f"t{i}", kind="python", description="", parameters=dict(shape), source_file="x"
        )
        for i in range(3)
    ]
    for spec in specs:  # a checker per task, as each task's toolbox has
        checker = attempts.ArgumentChecker()
        assert checker.problem(spec, {"q": "a"}) is None
        assert "'q' is a required property" in (checker.problem(spec, {}) or "")
    assert len(checks) == 1
    bad = dataclasses.replace(specs[0], parameters={"type": "nonsense"})
    for _ in range(2):
        problem = attempts.ArgumentChecker().problem(bad, {})
        assert problem and "parameter schema is invalid" in problem
    assert len(checks) == 2
