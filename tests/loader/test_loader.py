"""Loader: discovery, ordering, naming, cascade, providers, includes, injection, hashes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prefect_folpipe.errors import WorkflowValidationError
from prefect_folpipe.loader import load
from prefect_folpipe.validate import load_workflow
from prefect_folpipe.workflow.tree import Workflow

WORKFLOWS = Path(__file__).parent.parent / "fixtures" / "workflows"


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (a folder ending in '/' is created)."""
    for rel, text in files.items():
        target = root / rel
        if rel.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def pipeline() -> Workflow:
    return load_workflow(WORKFLOWS / "pipeline")


# --- discovery, names, order ---------------------------------------------------------------


def test_minimal_workflow_is_one_leaf_named_after_its_folder() -> None:
    workflow = load_workflow(WORKFLOWS / "minimal")
    root = workflow.root
    assert (workflow.name, root.name, root.path, root.kind) == ("minimal", "minimal", "", "leaf")
    assert root.instructions == "Say hello.\n"
    assert root.system_prompt == "Say hello.\n"
    assert root.source_file is None
    assert root.instructions_file == (WORKFLOWS / "minimal" / "instructions.md").absolute()
    assert root.provider is None
    assert workflow.warnings == ()


def test_pipeline_tree_shape_names_paths_and_order(pipeline: Workflow) -> None:
    shape = [(t.path, t.name, t.priority, t.kind, t.rel_dir) for t in pipeline.tasks()]
    assert shape == [
        ("", "data_pipeline", 50, "both", ""),
        ("fetch_data", "fetch_data", 10, "leaf", "subtasks/10_fetch_data"),
        ("process", "process", 20, "leaf", "subtasks/20_process"),
        ("generate_report", "generate_report", 30, "branch", "subtasks/30_generate_report"),
        (
            "generate_report/charts",
            "charts",
            10,
            "leaf",
            "subtasks/30_generate_report/subtasks/charts",
        ),
        (
            "generate_report/summary",
            "summary",
            50,
            "leaf",
            "subtasks/30_generate_report/subtasks/summary",
        ),
    ]
    assert pipeline.name == "data_pipeline"
    assert pipeline.find("generate_report").execution_type == "sequential"


def test_disabled_children_are_kept_aside(pipeline: Workflow) -> None:
    assert [t.name for t in pipeline.root.disabled_children] == ["legacy"]
    assert "legacy" not in [t.name for t in pipeline.tasks()]
    with pytest.raises(KeyError):
        pipeline.find("legacy")


def test_hidden_and_pycache_folders_are_ignored(pipeline: Workflow) -> None:
    names = {t.name for t in pipeline.root.children} | {
        t.name for t in pipeline.root.disabled_children
    }
    assert not any(name.startswith((".", "__")) for name in names)
    assert not pipeline.warnings


def test_priority_then_folder_name_orders_children(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "instructions.md": "root",
            "subtasks/b/instructions.md": "b",
            "subtasks/a/instructions.md": "a",
            "subtasks/30_c/instructions.md": "c",
            "subtasks/07_d/instructions.md": "d",
            "subtasks/z/task.yaml": "priority: 5\n",
            "subtasks/z/instructions.md": "z",
            "subtasks/40_e/task.yaml": "priority: 60\n",
            "subtasks/40_e/instructions.md": "e",
        },
    )
    root = load_workflow(tmp_path).root
    assert [(c.name, c.priority) for c in root.children] == [
        ("z", 5),
        ("d", 7),
        ("c", 30),
        ("a", 50),
        ("b", 50),
        ("e", 60),
    ]


def test_task_yaml_name_wins_over_folder_name(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "task.yaml": "name: wf\n",
            "subtasks/10_x/task.yaml": "name: renamed\n",
            "subtasks/10_x/instructions.md": "x",
            "subtasks/10_x/subtasks/20_deep/instructions.md": "deep",
        },
    )
    workflow = load_workflow(tmp_path)
    assert [t.path for t in workflow.tasks()] == ["", "renamed", "renamed/deep"]
    assert workflow.find("renamed/deep").rel_dir == "subtasks/10_x/subtasks/20_deep"


def test_prefix_only_folder_keeps_its_name(tmp_path: Path) -> None:
    write(tmp_path, {"subtasks/10_/instructions.md": "x", "subtasks/7/instructions.md": "y"})
    names = [c.name for c in load_workflow(tmp_path).root.children]
    assert names == ["10_", "7"]


def test_task_identity_markers(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "subtasks/only_yaml/task.yaml": "subtasks: {execution_type: sequential}\n",
            "subtasks/only_yaml/subtasks/leaf/instructions.md": "x",
            "subtasks/only_subtasks/subtasks/leaf/instructions.md": "y",
            "subtasks/only_instructions/instructions.md": "z",
            "subtasks/not_a_task/data.csv": "1,2",
        },
    )
    result = load(tmp_path)
    assert result.workflow is not None
    kinds = {c.name: c.kind for c in result.workflow.root.children}
    assert kinds == {"only_instructions": "leaf", "only_subtasks": "branch", "only_yaml": "branch"}
    assert [(d.code, d.file, d.severity.value) for d in result.diagnostics] == [
        ("FP113", "subtasks/not_a_task", "warning")
    ]


def test_subtasks_order_overrides_priority(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "task.yaml": "subtasks:\n  execution_type: sequential\n  order: [20_second, first]\n",
            "subtasks/10_first/instructions.md": "1",
            "subtasks/20_second/instructions.md": "2",
        },
    )
    assert [c.name for c in load_workflow(tmp_path).root.children] == ["second", "first"]


def test_subtasks_order_leaves_out_unlisted_children_with_a_warning(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "task.yaml": "subtasks:\n  order: [a]\n",
            "subtasks/a/instructions.md": "a",
            "subtasks/b/instructions.md": "b",
        },
    )
    workflow = load_workflow(tmp_path)
    assert [c.name for c in workflow.root.children] == ["a"]
    assert [(w.code, w.file, w.line) for w in workflow.warnings] == [("FP114", "task.yaml", 2)]


def test_skill_md_front_matter_replaces_task_yaml_and_instructions(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "subtasks/review/SKILL.md": (
                "---\nname: reviewer\npriority: 5\noutput: [approved]\n---\n"
                "Review the CV.\n{% include 'tone' %}\n"
            ),
            "shared/instructions/tone.md": "Be kind.\n",
        },
    )
    workflow = load_workflow(tmp_path)
    task = workflow.find("reviewer")
    assert task.priority == 5
    assert task.instructions == "Review the CV.\nBe kind.\n"
    assert task.system_prompt == (
        "Review the CV.\nBe kind.\n\nRespond with a JSON code block containing these keys: approved"
    )
    assert task.source_file == tmp_path / "subtasks/review/SKILL.md"
    assert task.instructions_file == tmp_path / "subtasks/review/SKILL.md"


def test_skill_md_without_front_matter_is_all_instructions(tmp_path: Path) -> None:
    write(tmp_path, {"SKILL.md": "# Skill\nDo it.\n"})
    root = load_workflow(tmp_path).root
    assert root.instructions == "# Skill\nDo it.\n"


def test_skill_md_errors_point_at_the_skill_file_lines(tmp_path: Path) -> None:
    write(tmp_path, {"SKILL.md": "---\nname: s\nprority: 3\n---\nbody\n"})
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow(tmp_path)
    [diag] = [d for d in info.value.diagnostics if d.severity == "error"]
    assert (diag.code, diag.file, diag.line, diag.hint) == (
        "FP103",
        "SKILL.md",
        3,
        "did you mean 'priority'?",
    )


# --- config cascade --------------------------------------------------------------------------


def test_settings_cascade_child_wins_and_defaults_fill(pipeline: Workflow) -> None:
    root = pipeline.root.settings
    assert (root.max_retries, root.timeout, root.parallel_workers) == (3, 300.0, 4)
    assert root.tags == ("team-a",)
    assert root.max_turns == 20 and root.cache is True
    fetch = pipeline.find("fetch_data").settings
    assert (fetch.max_retries, fetch.timeout, fetch.parallel_workers) == (5, 120.0, 4)
    report = pipeline.find("generate_report").settings
    assert (report.max_retries, report.timeout) == (3, 600.0)
    charts = pipeline.find("generate_report/charts").settings
    assert charts.timeout == 30.0
    summary = pipeline.find("generate_report/summary").settings
    assert summary.timeout == 600.0


def test_timeout_minus_one_means_no_limit(pipeline: Workflow) -> None:
    assert pipeline.find("process").settings.timeout is None


def test_retry_on_and_security_cascade(pipeline: Workflow) -> None:
    assert pipeline.root.settings.retry_on == ("ConnectionError",)
    assert pipeline.find("fetch_data").settings.retry_on == ("ConnectionError",)
    assert pipeline.find("process").settings.retry_on == ()  # a list replaces, even empty
    assert pipeline.find("fetch_data").settings.allow_sensitive_files is False
    assert pipeline.find("generate_report/charts").settings.allow_sensitive_files is True


def test_lists_replace_and_dicts_deep_merge(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "task.yaml": (
                "settings:\n  tags: [a, b]\n  rate_limit: {requests_per_minute: 60}\n"
                "  retry_delay_seconds: [1, 2]\n"
            ),
            "subtasks/x/task.yaml": "settings:\n  tags: [c]\n  rate_limit: {max_concurrent: 2}\n",
            "subtasks/x/instructions.md": "x",
        },
    )
    settings = load_workflow(tmp_path).find("x").settings
    assert settings.tags == ("c",)
    assert dict(settings.rate_limit or {}) == {"requests_per_minute": 60, "max_concurrent": 2}
    assert settings.retry_delay_seconds == (1.0, 2.0)


def test_no_retry_on_anywhere_is_none_once_max_retries_is_said(tmp_path: Path) -> None:
    write(tmp_path, {"instructions.md": "x", "task.yaml": "settings: {max_retries: 1}\n"})
    assert load_workflow(tmp_path).root.settings.retry_on is None


# --- providers -----------------------------------------------------------------------------


def test_provider_from_root_default_and_legacy_module(pipeline: Workflow) -> None:
    provider = pipeline.root.provider
    assert provider is not None
    assert (provider.name, provider.type, provider.model) == (
        "claude",
        "anthropic",
        "claude-sonnet-4-5",
    )
    assert provider.config.api_key_env == "ANTHROPIC_API_KEY"


def test_task_agent_overrides_deep_merge_over_the_block(pipeline: Workflow) -> None:
    provider = pipeline.find("fetch_data").provider
    assert provider is not None
    assert (provider.name, provider.model, provider.config.temperature) == (
        "claude",
        "claude-opus-4-1",
        0.2,
    )
    assert provider.config.api_key_env == "ANTHROPIC_API_KEY"


def test_task_agent_provider_picks_another_block(pipeline: Workflow) -> None:
    provider = pipeline.find("process").provider
    assert provider is not None
    assert (provider.name, provider.type, provider.config.base_url) == (
        "local",
        "ollama",
        "http://127.0.0.1:11434",
    )


def test_ancestor_agent_provider_is_inherited(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "task.yaml": (
                "providers:\n  default: scripted\n  scripted: {replies: r.yaml}\n"
                "  gpt: {type: openai, model: gpt-4o}\n"
            ),
            "subtasks/team/task.yaml": "agent: {provider: gpt, temperature: 0.5}\n",
            "subtasks/team/subtasks/worker/task.yaml": "agent: {model: gpt-4o-mini}\n",
            "subtasks/team/subtasks/worker/instructions.md": "w",
            "subtasks/solo/instructions.md": "s",
        },
    )
    workflow = load_workflow(tmp_path)
    worker = workflow.find("team/worker").provider
    assert worker is not None
    assert (worker.name, worker.type, worker.model, worker.config.temperature) == (
        "gpt",
        "openai",
        "gpt-4o-mini",
        0.5,
    )
    solo = workflow.find("solo").provider
    assert solo is not None
    assert (solo.name, solo.type, solo.config.replies) == ("scripted", "scripted", "r.yaml")


def test_builtin_name_without_block_and_custom_module(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "task.yaml": (
                "providers:\n  default: anthropic\n"
                "  mine: {module: my_pkg.provider, model: m1, custom_param: 7}\n"
            ),
            "subtasks/custom/task.yaml": "agent: {provider: mine, extra_knob: true}\n",
            "subtasks/custom/instructions.md": "c",
            "subtasks/plain/instructions.md": "p",
        },
    )
    workflow = load_workflow(tmp_path)
    plain = workflow.find("plain").provider
    assert plain is not None and (plain.name, plain.type) == ("anthropic", "anthropic")
    custom = workflow.find("custom").provider
    assert custom is not None
    assert (custom.name, custom.type, custom.config.module) == ("mine", "custom", "my_pkg.provider")
    assert custom.config.model_extra == {"custom_param": 7, "extra_knob": True}


def test_type_alias_claude(tmp_path: Path) -> None:
    write(tmp_path, {"task.yaml": "providers:\n  default: main\n  main: {type: claude}\n"})
    write(tmp_path, {"instructions.md": "x"})
    provider = load_workflow(tmp_path).root.provider
    assert provider is not None and (provider.name, provider.type) == ("main", "anthropic")


# --- instructions --------------------------------------------------------------------------


def test_nested_includes_are_expanded(pipeline: Workflow) -> None:
    task = pipeline.find("fetch_data")
    assert task.instructions == (
        "Fetch the data from {{ api_base_url }}.\n\n"
        "Format numbers with two decimals.\nBe concise.\n"
    )


def test_injected_json_instruction_list_form(pipeline: Workflow) -> None:
    prompt = pipeline.find("fetch_data").system_prompt or ""
    assert prompt.endswith(
        "\n\nRespond with a JSON code block containing these keys: raw_data, fetch_metadata"
    )


def test_injected_json_instruction_typed_dict_form(pipeline: Workflow) -> None:
    assert pipeline.find("process").system_prompt == (
        "Process the data.\n\n"
        "Respond with a JSON code block with the following keys and types:\n"
        "- digest (str)\n- rows (int)\n- extra (any)"
    )


def test_no_injection_when_instructions_ask_for_json(pipeline: Workflow) -> None:
    task = pipeline.find("generate_report/summary")
    assert task.system_prompt == task.instructions


def test_no_injection_without_output(pipeline: Workflow) -> None:
    assert pipeline.root.system_prompt == pipeline.root.instructions


def test_branch_without_instructions_has_no_prompt(pipeline: Workflow) -> None:
    task = pipeline.find("generate_report")
    assert (task.instructions, task.system_prompt, task.runs_agent) == (None, None, False)


# --- content hashes ------------------------------------------------------------------------


def _hashes(root: Path) -> dict[str, str]:
    return {t.path: t.content_hash for t in load_workflow(root).tasks()}


def test_content_hash_changes_with_own_files_only(tmp_path: Path) -> None:
    root = tmp_path / "wf"
    shutil.copytree(WORKFLOWS / "pipeline", root)
    before = _hashes(root)
    assert len(set(before.values())) == len(before)
    (root / "subtasks/20_process/instructions.md").write_text("Process it differently.\n")
    after = _hashes(root)
    changed = {path for path in before if before[path] != after[path]}
    assert changed == {"process"}


def test_content_hash_ignores_subtasks_hidden_and_state(tmp_path: Path) -> None:
    root = tmp_path / "wf"
    shutil.copytree(WORKFLOWS / "pipeline", root)
    before = _hashes(root)
    write(
        root,
        {
            ".folpipe/cache/x.json": "{}",
            "subtasks/30_generate_report/.notes/todo.md": "later",
            "subtasks/30_generate_report/subtasks/charts/instructions.md": "Draw bars.\n",
        },
    )
    after = _hashes(root)
    assert after[""] == before[""]
    assert after["generate_report"] == before["generate_report"]
    assert after["generate_report/charts"] != before["generate_report/charts"]


def test_content_hash_follows_included_snippets_and_provider(tmp_path: Path) -> None:
    root = tmp_path / "wf"
    shutil.copytree(WORKFLOWS / "pipeline", root)
    before = _hashes(root)
    (root / "shared/instructions/style/tone.md").write_text("Be thorough.\n")
    after = _hashes(root)
    assert {p for p in before if before[p] != after[p]} == {"fetch_data"}
    text = (root / "task.yaml").read_text().replace("claude-sonnet-4-5", "claude-haiku-4-5")
    (root / "task.yaml").write_text(text)
    again = _hashes(root)
    # the root's own file changed, and so did every task whose resolved model is the block's
    # (fetch_data sets its own model, so its provider settings are unchanged)
    changed = {p for p in after if after[p] != again[p]}
    assert changed == {"", "generate_report", "generate_report/charts", "generate_report/summary"}


def test_content_hash_covers_tools_and_hooks_folders(tmp_path: Path) -> None:
    write(tmp_path, {"instructions.md": "x"})
    first = load_workflow(tmp_path).root.content_hash
    write(tmp_path, {"hooks/notes.txt": "a"})
    second = load_workflow(tmp_path).root.content_hash
    write(tmp_path, {"hooks/__pycache__/x.pyc": "junk", "hooks/.hidden": "h"})
    third = load_workflow(tmp_path).root.content_hash
    assert first != second == third


# --- errors come together ------------------------------------------------------------------


def test_load_workflow_raises_once_with_every_error() -> None:
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow(WORKFLOWS / "broken")
    errors = [d for d in info.value.diagnostics if d.severity.value == "error"]
    assert len(errors) >= 15
    assert "FP110" in str(info.value)


def test_load_result_of_a_missing_folder(tmp_path: Path) -> None:
    result = load(tmp_path / "nope")
    assert result.workflow is None
    assert [d.code for d in result.diagnostics] == ["FP101"]


# --- tools and hooks (resolved by the tools package, wired in here) ------------------------


def test_tools_are_discovered_and_resolved() -> None:
    workflow = load_workflow(WORKFLOWS / "tools_tree")
    assert [t.name for t in workflow.shared_tools] == ["search_api", "format_results"]

    def names(path: str) -> list[tuple[str, str]]:
        return [(t.name, t.origin) for t in workflow.find(path).tools]

    assert names("") == [("admin_api", "own"), ("root_only", "own")]
    assert names("manager") == [
        ("summarize", "own"),
        ("search_api", "shared"),
        ("admin_api", "inherited"),
    ]
    assert names("manager/worker") == []  # admin_api blocked by manager, summarize excluded
    assert names("reader") == [("format_results", "shared"), ("admin_api", "inherited")]
    assert [t.name for t in workflow.find("manager").own_tools] == ["summarize"]


def test_hooks_are_discovered() -> None:
    workflow = load_workflow(WORKFLOWS / "tools_tree")
    hooks = workflow.find("manager").hooks
    assert set(hooks) == {"pre_run"}
    assert hooks["pre_run"].name == "pre_run.py"
    assert workflow.root.hooks == {}


def test_content_hash_follows_the_tools_a_task_inherits(tmp_path: Path) -> None:
    root = tmp_path / "wf"
    shutil.copytree(WORKFLOWS / "tools_tree", root)
    before = _hashes(root)
    tools_md = root / "tools.md"
    tools_md.write_text(tools_md.read_text().replace("Administer the system.", "Administer."))
    after = _hashes(root)
    # the root owns admin_api; manager and reader inherit it; worker cannot see it
    assert {p for p in before if before[p] != after[p]} == {"", "manager", "reader"}


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ('Summarise.\n\n```json\n{"a": 1}\n```', True),
        ("Respond only with a JSON object.", True),
        ("Return your answer as JSON.", True),
        ("Output format: json", True),
        ("Reply in valid JSON with keys a and b.", True),
        ("Summarise the report.", False),
        ("The input files are JSON.", False),
        ("Respond politely.\nThe data came from a JSON API.", False),
    ],
)
def test_asks_for_json_heuristic(text: str, asks: bool) -> None:
    from prefect_folpipe.loader._instructions import asks_for_json, system_prompt

    assert asks_for_json(text) is asks
    prompt = system_prompt(text, ["a", "b"])
    assert (prompt == text) is asks


def test_injection_texts_are_exact() -> None:
    from prefect_folpipe.loader._instructions import output_instruction

    assert output_instruction(["approved", "feedback"]) == (
        "Respond with a JSON code block containing these keys: approved, feedback"
    )
    assert output_instruction({"approved": "bool", "feedback": "str", "raw_result": None}) == (
        "Respond with a JSON code block with the following keys and types:\n"
        "- approved (bool)\n- feedback (str)\n- raw_result (any)"
    )
    assert output_instruction(None) is None
