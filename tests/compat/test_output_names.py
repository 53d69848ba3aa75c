"""A task named like a declared output key keeps the declared value.

This is also issue 11 point 1 ("a declared output key is clobbered when it equals the task's
name"), and what kept folpipe 0.1.8's cv_pipeline from writing its PDF.
"""

from __future__ import annotations

from prefect_folpipe import validate_workflow


def test_own_output_named_like_the_task_keeps_the_declared_value(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"subtasks": {"execution_type": "sequential"}},
            "subtasks/10_intro/task.yaml": {"output": ["intro", "title"]},
            "subtasks/10_intro/instructions.md": "Write the intro.",
            "subtasks/20_next/task.yaml": {"input": {"required": ["intro"]}},
            "subtasks/20_next/instructions.md": "Use the intro.",
            "replies.yaml": {
                "tasks": {"intro": [{"output": {"intro": "I", "title": "T"}}], "next": ["{echo}"]}
            },
        }
    )
    result = run(path)
    assert result.status == "completed"
    assert result.context["intro"] == "I"
    assert result.context["title"] == "T"


def test_a_name_copy_never_replaces_a_key_another_task_declares(make_workflow, run):
    path = make_workflow(
        {
            "task.yaml": {"subtasks": {"execution_type": "sequential"}},
            "subtasks/10_summary/task.yaml": {"output": ["summary_text"]},
            "subtasks/10_summary/instructions.md": "Summarise.",
            "subtasks/20_writer/task.yaml": {"output": ["summary"]},
            "subtasks/20_writer/instructions.md": "Write.",
            "replies.yaml": {
                "tasks": {
                    "writer": [{"output": {"summary": "S"}}],
                    "summary": [{"output": {"summary_text": "x"}}],
                }
            },
        }
    )
    result = run(path)
    assert result.context["summary"] == "S"
    assert result.context["writer"] == {"summary": "S"}  # other names still get the copy


def test_a_default_output_never_replaces_a_key_another_task_declares(make_workflow, run):
    """``on_failure: use_default`` places its default output by the same rule."""
    path = make_workflow(
        {
            "task.yaml": {"subtasks": {"execution_type": "sequential"}},
            "subtasks/10_writer/task.yaml": {"output": ["summary"]},
            "subtasks/10_writer/instructions.md": "Write.",
            "subtasks/20_summary/task.yaml": {
                "output": ["summary_text"],
                "on_failure": "use_default",
                "default_output": {"summary_text": "none"},
                "settings": {"max_retries": 0},
            },
            "subtasks/20_summary/instructions.md": "Summarise.",
            "replies.yaml": {
                "tasks": {
                    "writer": [{"output": {"summary": "S"}}],
                    "summary": [{"error": "auth"}],
                }
            },
        }
    )
    result = run(path)
    assert result.context["summary"] == "S"
    assert result.context["summary_text"] == "none"


def test_validate_warns_fp158_where_a_name_equals_a_declared_key(make_workflow):
    path = make_workflow(
        {
            "subtasks/final_cv/task.yaml": {"output": ["final_cv", "output_filename"]},
            "subtasks/final_cv/instructions.md": "Write it.",
            "subtasks/other/task.yaml": {"output": ["final_cv_2"]},
            "subtasks/other/instructions.md": "x",
        }
    )
    found = [d for d in validate_workflow(path) if d.code == "FP158"]
    assert len(found) == 1
    warning = found[0]
    assert warning.severity.value == "warning"
    assert warning.task == "final_cv"
    assert warning.file == "subtasks/final_cv/task.yaml"
    assert warning.line == 2
    assert warning.hint
