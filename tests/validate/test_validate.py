"""Validator: every rule reports its code, file, line, task and a hint, all in one pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_folpipe.errors import Diagnostic, Severity
from prefect_folpipe.validate import RULES, validate_workflow

WORKFLOWS = Path(__file__).parent.parent / "fixtures" / "workflows"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def where(diagnostics: list[Diagnostic]) -> set[tuple[str, str | None, int | None, str | None]]:
    return {(d.code, d.file, d.line, d.task) for d in diagnostics}


def only(tmp_path: Path, files: dict[str, str]) -> Diagnostic:
    diagnostics = validate_workflow(write(tmp_path, files))
    assert len(diagnostics) == 1, diagnostics
    return diagnostics[0]


@pytest.mark.parametrize("name", ["minimal", "pipeline"])
def test_valid_fixtures_have_no_diagnostics(name: str) -> None:
    assert validate_workflow(WORKFLOWS / name) == []


def test_broken_fixture_reports_every_problem_in_one_pass() -> None:
    diagnostics = validate_workflow(WORKFLOWS / "broken")
    assert where(diagnostics) == {
        ("FP103", "task.yaml", 9, ""),
        ("FP160", "task.yaml", 3, ""),
        ("FP161", "task.yaml", 6, ""),
        ("FP162", "task.yaml", 7, ""),
        ("FP120", "instructions.md", 2, ""),
        ("FP102", "subtasks/g/task.yaml", 2, "g"),
        ("FP125", "subtasks/a/task.yaml", 3, "a"),
        ("FP110", "subtasks/10_d/task.yaml", 2, ""),
        ("FP160", "subtasks/h/task.yaml", 2, "h"),
        ("FP122", "subtasks/i/instructions.md", 4, "i"),
        ("FP121", "shared/instructions/loop_b.md", 1, "i"),
        ("FP140", "subtasks/a/task.yaml", 1, "a"),
        ("FP142", "subtasks/a/task.yaml", 1, "a"),
        ("FP150", "subtasks/e/task.yaml", 2, "e"),
        ("FP151", "subtasks/f/task.yaml", 3, "f"),
        ("FP131", "subtasks/e/task.yaml", 4, "e"),
        ("FP130", "subtasks/f/task.yaml", 3, "f"),
        ("FP155", "subtasks/e/task.yaml", 5, "e"),
        ("FP156", "subtasks/f/task.yaml", 1, "f"),
        ("FP113", "subtasks/notes", None, ""),
        ("FP144", "subtasks/a/task.yaml", 1, "a"),
    }
    assert all(d.hint for d in diagnostics)
    severities = [d.severity for d in diagnostics]
    assert severities == sorted(severities, key=lambda s: s != Severity.ERROR)
    warnings = {d.code for d in diagnostics if d.severity == Severity.WARNING}
    assert warnings == {"FP113", "FP144"}


def test_did_you_mean_hints_in_the_broken_fixture() -> None:
    hints = {d.code + ":" + (d.file or ""): d.hint for d in validate_workflow(WORKFLOWS / "broken")}
    assert hints["FP103:task.yaml"] == "did you mean 'settings'?"
    assert hints["FP161:task.yaml"] == "did you mean 'api_key_env'?"
    assert hints["FP125:subtasks/a/task.yaml"].startswith("did you mean 'bool'?")


def test_json_form_of_diagnostics() -> None:
    first = validate_workflow(WORKFLOWS / "broken")[0]
    assert set(first.to_dict()) == {"code", "message", "file", "line", "task", "hint"}


def test_rules_are_a_tuple_of_functions() -> None:
    assert isinstance(RULES, tuple) and all(callable(rule) for rule in RULES)


# --- one rule at a time ----------------------------------------------------------------------


def test_root_without_task_marker(tmp_path: Path) -> None:
    diag = only(tmp_path, {"README.txt": "hi"})
    assert (diag.code, diag.file) == ("FP101", ".")


def test_yaml_syntax_error_line(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {"task.yaml": "name: x\nsettings:\n  timeout: 3\n   bad: [\n", "instructions.md": "x"},
    )
    assert (diag.code, diag.file, diag.line) == ("FP102", "task.yaml", 4)


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {"task.yaml": "priority: 1\ndescription: a\npriority: 2\n", "instructions.md": "x"},
    )
    assert (diag.code, diag.line) == ("FP105", 3)


@pytest.mark.parametrize(
    ("yaml_text", "line", "hint"),
    [
        ("settings:\n  max_retrys: 2\n", 2, "did you mean 'max_retries'?"),
        ("subtasks:\n  execution_typ: loop\n", 2, "did you mean 'execution_type'?"),
        ("conditions:\n  skipif: 'true'\n", 2, "did you mean 'skip_if'?"),
        ("tools:\n  useshared: [a]\n", 2, "did you mean 'use_shared'?"),
        ("input:\n  requried: [a]\n", 2, "did you mean 'required'?"),
        ("security:\n  allow_sensitive_file: true\n", 2, "did you mean 'allow_sensitive_files'?"),
        ("settings:\n  rate_limit:\n    max_concurent: 2\n", 3, "did you mean 'max_concurrent'?"),
        ("mcp_servers:\n  s:\n    command: python\n    arg: [s.py]\n", 4, "did you mean 'args'?"),
        ("descripton: x\n", 1, "did you mean 'description'?"),
    ],
)
def test_unknown_keys_at_every_level(tmp_path: Path, yaml_text: str, line: int, hint: str) -> None:
    diag = only(tmp_path, {"task.yaml": yaml_text, "instructions.md": "x"})
    assert (diag.code, diag.file, diag.line, diag.hint) == ("FP103", "task.yaml", line, hint)


@pytest.mark.parametrize(
    ("yaml_text", "line"),
    [
        ("priority: high\n", 1),
        ("settings:\n  max_retries: -1\n", 2),
        ("settings:\n  timeout: 0\n", 2),
        ("settings:\n  parallel_workers: many\n", 2),
        ("enabled: maybe\n", 1),
        ("depends_on: a\n", 1),
        ("subtasks:\n  order: [a, [b]]\n", 2),
        ("on_failure: explode\n", 1),
        ("inherit_tools: 3\n", 1),
        ("- a\n- b\n", 1),
        ("output: 5\n", 1),
    ],
)
def test_wrong_types_and_values(tmp_path: Path, yaml_text: str, line: int) -> None:
    diag = only(tmp_path, {"task.yaml": yaml_text, "instructions.md": "x"})
    assert (diag.code, diag.file, diag.line) == ("FP104", "task.yaml", line)


def test_literal_did_you_mean(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {"task.yaml": "subtasks:\n  execution_type: sequental\n", "instructions.md": "x"},
    )
    assert (diag.code, diag.line, diag.hint) == ("FP104", 2, "did you mean 'sequential'?")


def test_unsupported_output_type(tmp_path: Path) -> None:
    diag = only(tmp_path, {"task.yaml": "output:\n  a: str\n  b: string\n", "instructions.md": "x"})
    assert (diag.code, diag.line) == ("FP125", 3)
    assert (diag.hint or "").startswith("did you mean 'str'?")


def test_invalid_name(tmp_path: Path) -> None:
    diag = only(
        tmp_path, {"subtasks/x/task.yaml": "name: a/b\n", "subtasks/x/instructions.md": "x"}
    )
    assert (diag.code, diag.file, diag.line) == ("FP116", "subtasks/x/task.yaml", 1)


def test_duplicate_sibling_names_point_at_the_name_line(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "subtasks/10_x/instructions.md": "x",
            "subtasks/20_y/task.yaml": "description: y\nname: x\n",
            "subtasks/20_y/instructions.md": "y",
        },
    )
    assert (diag.code, diag.file, diag.line, diag.task) == (
        "FP110",
        "subtasks/20_y/task.yaml",
        2,
        "",
    )


def test_subtasks_order_unknown_and_duplicate(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(
            tmp_path,
            {
                "task.yaml": "subtasks:\n  order:\n    - alpha\n    - alhpa\n    - alpha\n",
                "subtasks/alpha/instructions.md": "a",
            },
        )
    )
    assert where(diagnostics) == {("FP111", "task.yaml", 4, ""), ("FP112", "task.yaml", 5, "")}
    assert diagnostics[0].hint == "did you mean 'alpha'?"


def test_include_errors(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(
            tmp_path,
            {
                "instructions.md": 'a\n{% include "fromatting" %}\nb {% include "../x" %}\n',
                "shared/instructions/formatting.md": "f",
            },
        )
    )
    assert where(diagnostics) == {
        ("FP120", "instructions.md", 2, ""),
        ("FP122", "instructions.md", 3, ""),
    }
    assert diagnostics[0].hint == "did you mean 'formatting'?"


def test_self_include_is_a_cycle(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "instructions.md": "{% include 'me' %}",
            "shared/instructions/me.md": "one\ntwo {% include 'me' %}\n",
        },
    )
    assert (diag.code, diag.file, diag.line) == ("FP121", "shared/instructions/me.md", 2)


def test_unknown_provider_and_unknown_type(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(
            tmp_path,
            {
                "task.yaml": "providers:\n  default: main\n  main:\n    type: antropic\n",
                "instructions.md": "x",
            },
        )
    )
    assert where(diagnostics) == {("FP162", "task.yaml", 4, "")}
    assert diagnostics[0].hint == "did you mean 'anthropic'?"


def test_unknown_agent_key_for_builtin_provider(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "task.yaml": "providers: {default: openai}\n",
            "subtasks/x/task.yaml": "agent:\n  model: gpt-4o\n  temprature: 0\n",
            "subtasks/x/instructions.md": "x",
        },
    )
    assert (diag.code, diag.file, diag.line, diag.hint) == (
        "FP161",
        "subtasks/x/task.yaml",
        3,
        "did you mean 'temperature'?",
    )


def test_providers_block_below_the_root_is_checked_where_it_is_written(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "subtasks/x/task.yaml": "providers:\n  default: openai\n  openai:\n    modle: x\n",
            "subtasks/x/instructions.md": "x",
        },
    )
    assert (diag.code, diag.file, diag.line, diag.task) == (
        "FP161",
        "subtasks/x/task.yaml",
        4,
        "x",
    )


def test_depends_on_outside_graph(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "subtasks/a/instructions.md": "a",
            "subtasks/b/task.yaml": "depends_on: [a]\n",
            "subtasks/b/instructions.md": "b",
        },
    )
    assert (diag.code, diag.file, diag.line, diag.task) == ("FP141", "subtasks/b/task.yaml", 1, "b")


def test_depends_on_on_the_root(tmp_path: Path) -> None:
    diag = only(tmp_path, {"task.yaml": "depends_on: [x]\n", "instructions.md": "x"})
    assert (diag.code, diag.line) == ("FP141", 1)


def test_dependency_cycle_of_three_and_self(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(
            tmp_path,
            {
                "task.yaml": "subtasks: {execution_type: graph}\n",
                "subtasks/a/task.yaml": "depends_on: [c]\n",
                "subtasks/b/task.yaml": "depends_on: [a]\n",
                "subtasks/c/task.yaml": "depends_on:\n  - b\n",
                "subtasks/d/task.yaml": "depends_on: [d]\n",
                **{f"subtasks/{n}/instructions.md": n for n in "abcd"},
            },
        )
    )
    assert where(diagnostics) == {
        ("FP142", "subtasks/a/task.yaml", 1, "a"),
        ("FP142", "subtasks/d/task.yaml", 1, "d"),
    }
    messages = sorted(d.message for d in diagnostics)
    assert messages == ["dependency cycle: a -> c -> b -> a", "dependency cycle: d -> d"]


def test_valid_graph_has_no_diagnostics(tmp_path: Path) -> None:
    files = {
        "task.yaml": "subtasks: {execution_type: graph}\n",
        "subtasks/fetch_a/instructions.md": "a",
        "subtasks/fetch_b/instructions.md": "b",
        "subtasks/merge/task.yaml": "depends_on: [fetch_a, fetch_b]\n",
        "subtasks/merge/instructions.md": "m",
    }
    assert validate_workflow(write(tmp_path, files)) == []


def test_loop_rules(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(
            tmp_path,
            {
                "subtasks/unbounded/task.yaml": "subtasks:\n  execution_type: loop\n",
                "subtasks/unbounded/subtasks/x/instructions.md": "x",
                "subtasks/until/task.yaml": (
                    "subtasks:\n  until: context.done\n  max_iterations: 3\n"
                ),
                "subtasks/until/subtasks/x/instructions.md": "x",
                "subtasks/forever/task.yaml": (
                    "subtasks:\n  execution_type: loop\n  max_iterations: 2\n"
                    "  on_max_iterations: fail\n"
                ),
                "subtasks/fixed/task.yaml": (
                    "subtasks:\n  execution_type: loop\n  max_iterations: 2\n"
                ),
                "subtasks/fixed/subtasks/x/instructions.md": "x",
                "subtasks/forever/subtasks/x/instructions.md": "x",
            },
        )
    )
    got = {(d.code, d.file, d.line, d.severity.value) for d in diagnostics}
    assert got == {
        ("FP150", "subtasks/unbounded/task.yaml", 2, "error"),
        ("FP151", "subtasks/until/task.yaml", 2, "error"),
        ("FP152", "subtasks/until/task.yaml", 3, "warning"),
        ("FP153", "subtasks/forever/task.yaml", 4, "warning"),
    }


def test_valid_loop(tmp_path: Path) -> None:
    files = {
        "task.yaml": (
            "subtasks:\n  execution_type: loop\n  until: context.review.approved == true\n"
            "  max_iterations: 5\n  iteration_timeout: 120\n"
        ),
        "subtasks/10_generate/instructions.md": "g",
        "subtasks/20_review/instructions.md": "r",
        "subtasks/20_review/task.yaml": "output: {approved: bool, feedback: str}\n",
    }
    assert validate_workflow(write(tmp_path, files)) == []


def test_structured_until_is_checked(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "task.yaml": (
                "subtasks:\n  execution_type: loop\n  max_iterations: 3\n"
                "  until:\n    key: review.approved\n    equal: true\n"
            ),
            "subtasks/x/instructions.md": "x",
        },
    )
    assert (diag.code, diag.line) == ("FP130", 4)
    assert "equals" in (diag.hint or "")


def test_unsafe_skip_if(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {"task.yaml": "conditions:\n  skip_if: context.__class__\n", "instructions.md": "x"},
    )
    assert (diag.code, diag.file, diag.line) == ("FP131", "task.yaml", 2)


def test_default_output_rules(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(
            tmp_path,
            {
                "subtasks/a/task.yaml": "output: [ok]\ndefault_output:\n  ok: false\n",
                "subtasks/b/task.yaml": "on_failure: use_default\n",
                "subtasks/c/task.yaml": (
                    "output: [ok]\non_failure: use_default\ndefault_output:\n  okay: false\n"
                ),
                **{f"subtasks/{n}/instructions.md": n for n in "abc"},
            },
        )
    )
    assert {(d.code, d.file, d.line) for d in diagnostics} == {
        ("FP155", "subtasks/a/task.yaml", 2),
        ("FP156", "subtasks/b/task.yaml", 1),
        ("FP157", "subtasks/c/task.yaml", 4),
    }


def test_task_that_does_nothing_is_a_warning(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {"subtasks/x/task.yaml": "description: nothing here\n", "subtasks/y/instructions.md": "y"},
    )
    assert (diag.code, diag.severity, diag.task) == ("FP115", Severity.WARNING, "x")


def test_empty_instructions_is_a_warning(tmp_path: Path) -> None:
    diag = only(tmp_path, {"instructions.md": "  \n"})
    assert (diag.code, diag.file, diag.line) == ("FP118", "instructions.md", 1)


def test_root_disabled_is_a_warning(tmp_path: Path) -> None:
    diag = only(tmp_path, {"task.yaml": "enabled: false\n", "instructions.md": "x"})
    assert (diag.code, diag.line) == ("FP117", 1)


def test_skill_md_next_to_task_yaml(tmp_path: Path) -> None:
    diag = only(tmp_path, {"SKILL.md": "---\nname: x\n---\nbody", "instructions.md": "x"})
    assert (diag.code, diag.file, diag.severity) == ("FP107", "SKILL.md", Severity.WARNING)


def test_unclosed_front_matter(tmp_path: Path) -> None:
    diag = only(tmp_path, {"SKILL.md": "---\nname: x\nbody\n"})
    assert (diag.code, diag.line) == ("FP107", 1)


def test_non_utf8_task_yaml(tmp_path: Path) -> None:
    (tmp_path / "instructions.md").write_text("x")
    (tmp_path / "task.yaml").write_bytes(b"name: \xff\xfe\n")
    [diag] = validate_workflow(tmp_path)
    assert (diag.code, diag.file) == ("FP108", "task.yaml")


def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    diag = only(tmp_path, {"task.yaml": "\n".join(lines) + "\n", "instructions.md": "x"})
    assert diag.code == "FP102"


def test_validate_never_raises_on_a_file_path(tmp_path: Path) -> None:
    file = write(tmp_path, {"f.txt": "x"}) / "f.txt"
    assert [d.code for d in validate_workflow(file)] == ["FP101"]


def test_tool_diagnostics_get_files_and_lines() -> None:
    diagnostics = validate_workflow(WORKFLOWS / "tools_broken")
    got = {(d.code, d.file, d.line, d.task, d.severity.value) for d in diagnostics}
    assert got == {
        ("FP203", "tools.md", 6, "", "error"),
        ("FP214", "subtasks/a/tools/broken.py", 1, "a", "error"),
        ("FP220", "subtasks/a/task.yaml", 5, "a", "error"),
        ("FP222", "subtasks/a/task.yaml", 6, "a", "warning"),
        ("FP223", "subtasks/b/task.yaml", 1, "b", "warning"),
    }
    by_code = {d.code: d for d in diagnostics}
    assert by_code["FP220"].hint == "did you mean 'search_api'?"
    assert "No module named 'definitely_not_installed_xyz'" in by_code["FP214"].message
    assert "Traceback" not in by_code["FP214"].message


def test_tools_tree_is_valid() -> None:
    assert validate_workflow(WORKFLOWS / "tools_tree") == []


def test_depends_on_by_folder_name_hints_the_task_name(tmp_path: Path) -> None:
    diag = only(
        tmp_path,
        {
            "task.yaml": "subtasks: {execution_type: graph}\n",
            "subtasks/10_fetch/instructions.md": "f",
            "subtasks/20_merge/task.yaml": "depends_on: [10_fetch]\n",
            "subtasks/20_merge/instructions.md": "m",
        },
    )
    assert (diag.code, diag.file, diag.line) == ("FP140", "subtasks/20_merge/task.yaml", 1)
    assert diag.hint == "refer to the sibling by its name 'fetch', not its folder name"


def test_symlink_loop_is_reported_not_followed(tmp_path: Path) -> None:
    write(tmp_path, {"instructions.md": "root", "subtasks/a/instructions.md": "a"})
    (tmp_path / "subtasks" / "again").symlink_to(tmp_path, target_is_directory=True)
    diag = only(tmp_path, {})
    assert (diag.code, diag.file) == ("FP119", "subtasks/again")


def test_an_unexpected_failure_becomes_fp190(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import prefect_folpipe.validate as validate

    def broken_check(path: object, **options: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(validate, "check", broken_check)
    [diag] = validate_workflow(write(tmp_path, {"instructions.md": "x"}))
    assert diag.code == "FP190" and "RuntimeError: boom" in diag.message


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("output: [1, [2]]\n", "output: expected a list of key names, or a mapping of key: type"),
        ("inherit_tools: some\n", "inherit_tools: expected true, false or a list of tool names"),
        ("providers:\n  claude: 3\n", "providers.claude: expected a provider block (a mapping)"),
        ("context:\n  1: x\n", "key 1 in context must be a string"),
    ],
)
def test_union_and_key_errors_read_plainly(tmp_path: Path, yaml_text: str, message: str) -> None:
    diag = only(tmp_path, {"task.yaml": yaml_text, "instructions.md": "x"})
    assert diag.code == "FP104"
    assert diag.message.startswith(message)


def test_subtasks_order_without_subtasks_folder(tmp_path: Path) -> None:
    diagnostics = validate_workflow(
        write(tmp_path, {"task.yaml": "subtasks:\n  order: [ghost]\n", "instructions.md": "x"})
    )
    assert where(diagnostics) == {("FP111", "task.yaml", 2, "")}


def test_files_and_folders_in_the_wrong_places_do_not_crash(tmp_path: Path) -> None:
    for folder in (
        "task.yaml",
        "instructions.md",
        "subtasks/c/tools.md",
        "shared/tools.md",
        "subtasks/c/hooks/pre_run.py",
        "shared/instructions/x.md",
        "subtasks/a/subtasks",
    ):
        (tmp_path / folder).mkdir(parents=True)
    write(
        tmp_path,
        {
            "subtasks/b/subtasks": "",
            "subtasks/c/tools": "",
            "subtasks/c/instructions.md": '{% include "x" %}',
        },
    )
    diagnostics = validate_workflow(tmp_path)
    assert {(d.code, d.file) for d in diagnostics} == {
        ("FP108", "task.yaml"),
        ("FP108", "instructions.md"),
        ("FP120", "subtasks/c/instructions.md"),
        ("FP115", "subtasks/a"),
        ("FP115", "subtasks/b"),
        ("FP225", "subtasks/c/hooks/pre_run.py"),  # a folder where a hook file belongs
    }
    assert diagnostics[0].hint == "it must be a file, not a folder"
