"""Tools as folpipe 0.1.8 wrote them: ``ctx.state``/``set``/``task_path`` (point 6), shell tools
that read the context from ``AGENTFLOW_CONTEXT[_FILE]`` and print JSON into it (point 2), and
cmd-style ``%name%`` parameters (point 9)."""

from __future__ import annotations

import json

from prefect_folpipe import validate_workflow
from prefect_folpipe.loader.tools._shellparams import infer_shell_params

STATE_TOOLS = """\
## remember
> type: python

Copy the draft, as 0.1.8's render_pdf reads it.

```python
def remember(ctx, note: str) -> str:
    text = ctx.state.get("draft", "")
    ctx.set("copied", text.upper())
    ctx.state["note"] = note
    return str(ctx.task_path == ctx.task_dir)
```
"""


def test_python_tools_get_state_set_and_task_path(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"context": {"draft": "hello"}},
            "instructions.md": "Remember.",
            "tools.md": STATE_TOOLS,
            "replies.yaml": {
                "default": [
                    {"tool_calls": [{"name": "remember", "arguments": {"note": "n"}}]},
                    {"echo": True},
                ]
            },
        }
    )
    result = run(path)
    assert result.status == "completed"
    assert result.context["copied"] == "HELLO"
    assert result.context["note"] == "n"
    transcript = result.context[result.tasks[0]["name"]]
    assert "True" in transcript  # the tool's result: task_path is task_dir


CONTEXT_TOOLS = """\
## get_value
> type: shell

Read a value from the context and return it as JSON (0.1.8's own test script).

```bash
value=$(echo "$AGENTFLOW_CONTEXT" \\
  | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["input_value"]))')
echo "{\\"result\\": $value}"
```

## from_file
> type: shell

Read the context file; print plain text.

```bash
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["AGENTFLOW_CONTEXT_FILE"]))
print("n=" + str(len(d["input_value"])) + " task=" + os.environ["AGENTFLOW_TASK_NAME"])
PY
```
"""


def test_shell_tools_read_agentflow_context_and_merge_json_stdout(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"name": "shell_ctx", "context": {"input_value": "hello"}},
            "instructions.md": "Get the value.",
            "tools.md": CONTEXT_TOOLS,
            "replies.yaml": {
                "default": [
                    {"tool_calls": [{"name": "get_value", "arguments": {}}]},
                    {"tool_calls": [{"name": "from_file", "arguments": {}}]},
                    {"echo": True},
                ]
            },
        }
    )
    assert [d.code for d in validate_workflow(path)] == []  # no inferred $AGENTFLOW_CONTEXT
    result = run(path)
    assert result.status == "completed"
    assert result.context["result"] == "hello"  # the JSON object was merged
    transcript = result.context["shell_ctx"]
    assert "n=5 task=shell_ctx" in transcript  # plain text: returned, not merged
    assert "n=5 task=shell_ctx" not in json.dumps(
        {k: v for k, v in result.context.items() if k != "shell_ctx"}
    )


def test_a_large_context_comes_as_a_file_only(make_workflow, run):
    tools = """\
## sizes
> type: shell

```bash
echo "{\\"env_len\\": ${#AGENTFLOW_CONTEXT}, \\"file_len\\": $(wc -c < "$FOLPIPE_CONTEXT_FILE")}"
```
"""
    path = make_workflow(
        {
            "task.yaml": {"context": {"big": "x" * 150_000}},
            "instructions.md": "Sizes.",
            "tools.md": tools,
            "replies.yaml": {
                "default": [{"tool_calls": [{"name": "sizes", "arguments": {}}]}, "done"]
            },
        }
    )
    result = run(path)
    assert result.status == "completed"
    assert result.context["env_len"] == 0
    assert result.context["file_len"] > 150_000


def test_cmd_style_parameters_are_inferred_and_warned_about(make_workflow):
    assert infer_shell_params('dir /b "%output_dir%" 2>nul') == {
        "type": "object",
        "properties": {"output_dir": {"type": "string"}},
        "required": ["output_dir"],
        "additionalProperties": False,
    }
    tools = """\
## list_output_files
> type: shell

List the files.

```bash
dir /b "%output_dir%" 2>nul
```
"""
    path = make_workflow({"instructions.md": "x", "tools.md": tools})
    warnings = [d for d in validate_workflow(path) if d.code == "FP229"]
    assert len(warnings) == 1
    assert "%output_dir%" in warnings[0].message
    assert warnings[0].line == 7 and warnings[0].file == "tools.md"
    assert "$output_dir" in warnings[0].hint
