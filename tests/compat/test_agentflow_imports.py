"""``from agentflow import tool`` in workflow code written for folpipe 0.1.8 (point 4).

No top-level ``agentflow`` package is installed: the names are answered only while folpipe
loads or runs workflow code.
"""

from __future__ import annotations

import importlib.util
import sys

from prefect_folpipe import validate_workflow
from prefect_folpipe.authoring.agentflow import agentflow_imports
from prefect_folpipe.validate import load_workflow

TOOLS_PY = '''\
from agentflow import tool, ToolContext


@tool()
def echo(ctx: ToolContext, text: str) -> str:
    """Echo the text back."""
    ctx.set("echoed", text)
    return f"echo:{text}"


@tool("shout", "Upper-case the text.")
def loud(text: str) -> str:
    from agentflow.utils.logging import get_logger  # a lazy import, at call time

    get_logger(__name__).info("shouting")
    return text.upper()


@tool
def bare(x: int) -> int:
    """Bare decorator (0.1.8 ignored it; folpipe takes it)."""
    return x + 1
'''

HOOK = """\
from agentflow.hooks.base import Hook
from agentflow.exceptions import AgentflowError


class Stamp(Hook):
    def run(self, ctx, task):
        if not isinstance(task.name, str):
            raise AgentflowError("no name")
        ctx.state["stamped"] = task.name
"""

TOOLS_MD = """\
## add
> type: python

```python
from agentflow.core.tool import ToolContext


def add(ctx: ToolContext, a: int, b: int) -> int:
    return a + b
```
"""


def test_tools_and_hooks_importing_agentflow_load_and_run(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"name": "compat"},
            "instructions.md": "Use the tools.",
            "tools/echo_tools.py": TOOLS_PY,
            "tools.md": TOOLS_MD,
            "hooks/post_run.py": HOOK,
            "replies.yaml": {
                "default": [
                    {
                        "tool_calls": [
                            {"name": "echo", "arguments": {"text": "hi"}},
                            {"name": "shout", "arguments": {"text": "hi"}},
                            {"name": "bare", "arguments": {"x": 1}},
                            {"name": "add", "arguments": {"a": 2, "b": 3}},
                        ]
                    },
                    {"echo": True},
                ]
            },
        }
    )
    assert [d.code for d in validate_workflow(path)] == []
    workflow = load_workflow(path)
    tools = {spec.name: spec for spec in workflow.root.tools}
    assert sorted(tools) == ["add", "bare", "echo", "shout"]
    assert tools["shout"].description == "Upper-case the text."
    result = run(path)
    assert result.status == "completed"
    transcript = result.context["compat"]
    for expected in ("echo:hi", "HI", "2", "5"):
        assert expected in transcript
    assert result.context["echoed"] == "hi"
    assert result.context["stamped"] == "compat"
    assert "agentflow" not in sys.modules
    assert importlib.util.find_spec("agentflow") is None


def test_agentflow_exists_only_inside_the_context():
    assert importlib.util.find_spec("agentflow") is None
    with agentflow_imports(), agentflow_imports():
        import agentflow
        from agentflow.core.tool import tool

        assert agentflow.tool is tool
        assert agentflow.__version__ == "0.1.8"
    assert "agentflow" not in sys.modules
    assert importlib.util.find_spec("agentflow") is None


def test_leaving_the_context_removes_every_compat_module_and_only_those():
    """Every ``agentflow`` module imported inside goes when the last user leaves; a module of
    the same name that folpipe did not make (a real ``agentflow`` the user imported) stays."""
    import types

    with agentflow_imports():
        import agentflow.core.tool  # noqa: F401

        assert {"agentflow", "agentflow.core", "agentflow.core.tool"} <= set(sys.modules)
    assert not [name for name in sys.modules if name.split(".")[0] == "agentflow"]
    foreign = types.ModuleType("agentflow")
    sys.modules["agentflow"] = foreign
    try:
        with agentflow_imports():
            pass
        assert sys.modules["agentflow"] is foreign
    finally:
        del sys.modules["agentflow"]


def test_an_unsupported_agentflow_module_names_what_is_supported(make_workflow):
    path = make_workflow(
        {
            "instructions.md": "x",
            "tools/provider_tools.py": "from agentflow.core.agent import AgentProvider\n",
        }
    )
    problems = [d for d in validate_workflow(path) if d.code == "FP214"]
    assert len(problems) == 1
    assert "agentflow.core.agent" in problems[0].message
    assert "agentflow.core.tool" in problems[0].hint
