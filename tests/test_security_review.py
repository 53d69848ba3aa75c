"""Security review regressions: untrusted model output must not escape where it is shown."""

from __future__ import annotations

import logging
import os
import re
import traceback
from dataclasses import replace
from pathlib import Path

import pytest

from prefect_folpipe.agent.loop import AgentPass, converse
from prefect_folpipe.compile.report.artifacts import render_task
from prefect_folpipe.errors import HookError, ProviderError
from prefect_folpipe.expressions import ExpressionError, compile_condition
from prefect_folpipe.loader.tools._modules import discover_tools
from prefect_folpipe.providers import ModelRequest, ModelResponse, ToolCall
from prefect_folpipe.tools.hooks import run_hook
from prefect_folpipe.tools.toolbox import Toolbox
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow

INJECTION = "ok\n```\n<script>alert(1)</script>\n# Owned\n```json\n{}"


def _task(folder: Path) -> Task:
    return Task(
        name="t",
        path="t",
        folder=folder,
        config=TaskConfig.model_validate({}),
        settings=EffectiveSettings(),
        instructions="Do it.",
        system_prompt="Do it.",
    )


def _outside_fences(markdown: str) -> list[str]:
    """Lines of ``markdown`` that a CommonMark renderer shows outside fenced code blocks."""
    outside, fence = [], None
    for line in markdown.splitlines():
        match = re.match(r"^(`{3,})", line)
        if fence is None and match:
            fence = match.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            outside.append(line)
    return outside


def test_model_text_cannot_close_the_artifact_fence(tmp_path: Path) -> None:
    payload = {
        "text": INJECTION,
        "delta": {"summary": INJECTION},
        "tool_log": [{"name": "x", "arguments": {"q": INJECTION}, "result": INJECTION}],
    }
    markdown = render_task(_task(tmp_path), "t", payload)
    outside = "\n".join(_outside_fences(markdown))
    assert "<script>" not in outside
    assert "# Owned" not in outside
    assert markdown.count("<script>") == 4  # still shown, inside code blocks


def test_model_chosen_tool_name_stays_one_inline_code_heading(tmp_path: Path) -> None:
    payload = {"tool_log": [{"name": "a`\n<img src=x onerror=alert(1)>\n# b", "result": "r"}]}
    markdown = render_task(_task(tmp_path), "t", payload)
    heading = next(line for line in markdown.splitlines() if line.startswith("### 1."))
    assert heading.count("`") == 2
    assert "<img" in heading
    assert all(not line.startswith("<img") for line in _outside_fences(markdown))


class _EchoingProvider:
    """A custom adapter whose error echoes the request's key (as some proxies do)."""

    name = "echo"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise ProviderError(f"401: bad x-api-key {os.environ['ANTHROPIC_API_KEY']}", kind="auth")


async def test_provider_error_messages_are_masked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret123456789")
    task = _task(tmp_path)
    agent = AgentPass(task=task, provider=_EchoingProvider(), system="S", user_message="{}")
    with pytest.raises(ProviderError) as caught:
        await converse(agent)
    assert "sk-ant-secret123456789" not in str(caught.value)
    assert "sk-ant-secret123456789" not in repr(caught.value)
    assert "[REDACTED]" in str(caught.value)
    assert caught.value.kind == "auth"


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("pre_run.py", "import os\ndef run(ctx, task):\n    raise ValueError(os.environ['K'])\n"),
        ("pre_run.sh", "cat secret.txt; exit 3\n"),
    ],
)
async def test_hook_failures_do_not_carry_secret_values(
    tmp_path: Path, monkeypatch, name: str, body: str
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdef-987654")
    monkeypatch.setenv("K", "tok-abcdef-987654")
    (tmp_path / "secret.txt").write_text("tok-abcdef-987654")
    hook = tmp_path / "hooks" / name
    hook.parent.mkdir()
    hook.write_text(body)
    with pytest.raises(HookError) as caught:
        await run_hook("pre_run", hook, context={}, task=_task(tmp_path))
    shown = "".join(traceback.format_exception(caught.value))
    assert "tok-abcdef-987654" not in shown
    assert "[REDACTED]" in str(caught.value)


async def test_a_model_chosen_tool_name_cannot_forge_log_lines(tmp_path: Path) -> None:
    messages: list[str] = []
    logger = logging.getLogger("test_security_review.forge")
    logger.setLevel(logging.INFO)
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    task = _task(tmp_path)
    box = Toolbox(task, Workflow(root=task, root_dir=tmp_path, name="wf"), {}, logger=logger)
    name = "x\n12:00:00.000 | INFO    | Flow run 'y' - Finished in state Completed()"
    result = await box.call(ToolCall(id="1", name=name, arguments={}))
    logger.removeHandler(handler)
    assert result.is_error
    assert messages
    assert all("\n" not in message for message in messages)
    assert any("x\\n12:00" in message for message in messages)


SHELL_TOOLS_MD = """
## probe
> type: shell
> params: text (str)

Echo an argument and the environment.

```bash
printf '%s\\n' "$TEXT"; env; yes 0123456789 | head -c 3000000
```
"""


async def test_shell_tool_arguments_are_data_env_is_stripped_output_capped(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret123456789")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdef-987654")
    (tmp_path / "tools.md").write_text(SHELL_TOOLS_MD)
    tools, diagnostics = discover_tools(tmp_path, owner="t")
    assert not [d for d in diagnostics if d.severity == "error"]
    task = replace(_task(tmp_path), tools=tuple(tools))
    box = Toolbox(task, Workflow(root=task, root_dir=tmp_path, name="wf"), {})
    marker = tmp_path / "pwned"
    text = f"$(touch {marker}); `touch {marker}`; touch {marker}\ntouch {marker}"
    result = await box.call(ToolCall(id="1", name="probe", arguments={"text": text}))
    assert not result.is_error
    assert not marker.exists()
    assert result.content.startswith(text)
    assert "ANTHROPIC_API_KEY" not in result.content
    assert "tok-abcdef" not in result.content and "HOME=" not in result.content
    assert len(result.content) < 21_000 and "truncated" in result.content


@pytest.mark.parametrize(
    "expr",
    [
        "'%0*d' % (10**9, 0) != ''",
        "'%01000000000d' % 0 != ''",
        "'%.1000000000f' % 1.0 != ''",
        "context.x.__class__",
        "context.get.__self__",
        "'{0.__class__}'.format(context)",
        "10**10**10 > 0",
        "'a' * 10**9 != ''",
    ],
)
def test_expressions_cannot_escape_or_exhaust(expr: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_condition(expr).evaluate({"x": {"a": 1}})
    assert caught.value.code in {"FP131", "FP132", "FP133"}  # FP133: a constant past the bounds


def test_percent_formatting_still_works() -> None:
    assert compile_condition("'%s/%03d%%' % (context.a, 7) == 'x/007%'").evaluate({"a": "x"})
