"""tools.md parsing and tools/*.py discovery: every form, every malformed case, with lines."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prefect_folpipe.errors import Severity
from prefect_folpipe.loader.tools._modules import discover_tools
from prefect_folpipe.loader.tools._shellparams import infer_shell_params
from prefect_folpipe.loader.tools._toolsmd import parse_tools_md

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tools"


def write_md(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tools.md"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def codes(diagnostics) -> list[tuple[str, int | None]]:
    return [(d.code, d.line) for d in diagnostics]


# --------------------------------------------------------------------------- spec example


def test_spec_section_7_1_example_parses_verbatim() -> None:
    tools, diagnostics = parse_tools_md(FIXTURES / "spec_example" / "tools.md", owner="t")
    assert diagnostics == []
    by_name = {t.name: t for t in tools}
    assert list(by_name) == [
        "search_api",
        "generate_chart",
        "get_weather",
        "slack_notify",
        "web_browser",
    ]
    assert [t.kind for t in tools] == ["python", "shell", "http", "mcp", "reference"]
    assert [t.line for t in tools] == [1, 14, 23, 35, 42]
    assert all(t.owner == "t" and t.origin == "own" for t in tools)

    search = by_name["search_api"]
    assert search.description == "Search the external API for records matching a query."
    assert search.function_name == "search_api"
    assert "def search_api(ctx: ToolContext" in (search.code or "")
    assert search.parameters["properties"] == {
        "query": {"type": "string"},
        "limit": {"type": "integer", "default": 10},
    }
    assert search.parameters["required"] == ["query"]

    chart = by_name["generate_chart"]
    assert chart.code and chart.code.startswith("gnuplot")
    assert set(chart.parameters["properties"]) == {"input", "output"}

    weather = by_name["get_weather"]
    assert weather.metadata["method"] == "GET"
    assert weather.metadata["url"] == "https://api.weather.com/v1/forecast"
    assert weather.metadata["headers"] == {"Authorization": "Bearer ${WEATHER_API_KEY}"}
    assert weather.description == "Get weather forecast for a location."
    assert weather.parameters == {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City name or coordinates"},
            "days": {"type": "integer", "default": 3, "description": "Forecast days"},
        },
        "required": ["location"],
        "additionalProperties": False,
    }

    slack = by_name["slack_notify"]
    assert slack.metadata["server"] == "slack-mcp"
    assert slack.metadata["tool"] == "send_message"

    browser = by_name["web_browser"]
    assert not browser.executable
    assert browser.description.startswith("Browse the web")
    assert len({t.content_hash for t in tools}) == 5


def test_content_hash_changes_with_code_and_metadata(tmp_path: Path) -> None:
    text = """
    ## greet
    > type: shell
    > timeout: 5

    Say hi.

    ```bash
    echo hi
    ```
    """
    first = parse_tools_md(write_md(tmp_path, text), owner="")[0][0].content_hash
    again = parse_tools_md(write_md(tmp_path, text), owner="")[0][0].content_hash
    code_changed = parse_tools_md(write_md(tmp_path, text.replace("echo hi", "echo yo")), owner="")
    meta_changed = parse_tools_md(write_md(tmp_path, text.replace("5", "6")), owner="")
    assert first == again
    assert code_changed[0][0].content_hash != first
    assert meta_changed[0][0].content_hash != first


# --------------------------------------------------------------------------- forms


def test_default_type_is_python_and_docstring_describes_parameters(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        '''
        # My tools (H1 and intro text are ignored)

        ## add
        Add two numbers.

        ```python
        def _helper(x):
            return x

        def add(a: int, b: float = 1.5, tags: list[str] | None = None) -> float:
            """Add.

            Args:
                a: First number.
                b: Second number.
            """
            return a + b
        ```
        ''',
    )
    tools, diagnostics = parse_tools_md(path, owner="x")
    assert diagnostics == []
    (add,) = tools
    assert add.kind == "python" and add.line == 3
    assert add.description == "Add two numbers."
    props = add.parameters["properties"]
    assert props["a"] == {"type": "integer", "description": "First number."}
    assert props["b"]["description"] == "Second number."
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert add.parameters["required"] == ["a"]
    assert add.parameters["additionalProperties"] is False


def test_single_public_function_with_other_name_is_used(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## shout
        ```python
        def make_loud(text: str) -> str:
            \"\"\"Upper-case the text.\"\"\"
            return text.upper()
        ```
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert tool.function_name == "make_loud"
    assert tool.description == "Upper-case the text."


def test_function_metadata_picks_among_several(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## shout
        > function: loud

        Loud.

        ```python
        def loud(text: str) -> str:
            return text.upper()

        def quiet(text: str) -> str:
            return text.lower()
        ```
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert tool.function_name == "loud"


def test_parameters_list_gives_python_descriptions(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## lookup
        Look something up.

        **Parameters:**
        - key (str): The key to look up
          across two lines.

        ```python
        def lookup(key: str) -> str:
            return key
        ```
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert tool.description == "Look something up."
    assert tool.parameters["properties"]["key"]["description"] == (
        "The key to look up across two lines."
    )


def test_metadata_scope_timeout_retries(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## dangerous_delete
        > type: python
        > scope: local
        > timeout: 2.5
        > retries: 3

        Delete records from database. Only for this task.

        ```python
        def dangerous_delete(record_id: str) -> str:
            return record_id
        ```
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert tool.scope == "local"
    assert tool.metadata["timeout"] == 2.5
    assert tool.metadata["retries"] == 3


def test_shell_params_metadata_and_parameters_list(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## count
        > type: shell
        > params: path (str), min (int, default=0), flags (list[str], optional)

        Count.

        ```sh
        wc -l "$path"
        ```

        ## grep_it
        > type: shell

        Search.

        Parameters:
        * pattern (string): regex
        * limit (integer, default=5): max lines

        ```bash
        grep -m "$LIMIT" "$PATTERN" input/*.txt
        ```
        """,
    )
    (count, grep_it), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert count.parameters["properties"] == {
        "path": {"type": "string"},
        "min": {"type": "integer", "default": 0},
        "flags": {"type": "array", "items": {"type": "string"}},
    }
    assert count.parameters["required"] == ["path"]
    assert grep_it.parameters["required"] == ["pattern"]
    assert grep_it.parameters["properties"]["limit"]["default"] == 5
    assert grep_it.description == "Search."


def test_shell_parameters_inferred_from_script_variables() -> None:
    schema = infer_shell_params(
        'OUT=result.txt\nfor f in input/*; do echo "$f $QUERY ${LIMIT:-10} $HOME $PATH"; done'
        ' > "$OUT"\nread answer\necho "$answer"'
    )
    assert schema["properties"] == {"query": {"type": "string"}, "limit": {"type": "string"}}
    assert schema["required"] == ["query"]


def test_heading_with_backticks_and_code_fence_with_tildes(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## `echo_it`
        > type: shell

        ~~~bash
        echo "## not a heading"
        ~~~
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert tool.name == "echo_it"
    assert tool.code == 'echo "## not a heading"\n'


def test_description_mentions_blockquote_after_text(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## helper
        > type: reference

        Use your judgement.

        > This quote is part of the description.
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert "This quote is part of the description." in tool.description


def test_mcp_without_parameters_accepts_any_arguments(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## notify
        > type: mcp
        > server: slack

        Notify.
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert tool.metadata["tool"] == "notify"
    assert tool.parameters["additionalProperties"] is True


# --------------------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("##\n\ntext\n", [("FP202", 1)]),
        ("## bad name!\n> type: reference\n", [("FP203", 1)]),
        ("## t\n> type: pyton\n\n```python\ndef t(): pass\n```\n", [("FP205", 2)]),
        ("## t\n> type: shell\n\nNo code here.\n", [("FP209", 1)]),
        ("## t\n\nNo code here.\n", [("FP209", 1)]),
        ("## t\n> type: shell\n\n```bash\necho hi\n", [("FP209", 4)]),
        ("## t\n> just a note\n> type: reference\n", [("FP206", 2)]),
        ("## t\n> type: reference\n> scope: global\n", [("FP208", 3)]),
        ("## t\n> type: reference\n> timeout: soon\n", [("FP208", 3)]),
        ("## t\n> type: reference\n> retries: -1\n", [("FP208", 3)]),
        ("## t\n> type: http\n> url: https://x\n> method: FETCH\n", [("FP208", 4)]),
        ("## t\n> type: http\n> url: https://x\n> headers: [1, 2]\n", [("FP208", 4)]),
        ("## t\n> type: http\n> url: https://x\n> headers: {a: [\n", [("FP208", 4)]),
        ("## t\n> type: http\n\nNo url.\n", [("FP212", 1)]),
        ("## t\n> type: mcp\n\nNo server.\n", [("FP212", 1)]),
        (
            "## t\n> type: http\n> url: https://x\n\n**Parameters:**\n- days (weeks): x\n",
            [("FP213", 6)],
        ),
        (
            "## t\n> type: shell\n> params: a (str, ), b (frob)\n\n```sh\necho\n```\n",
            [("FP213", 3)],
        ),
        (
            "## t\n\n```python\ndef t(x: int) -> int:\n    return x +\n```\n",
            [("FP210", 5)],
        ),
        ("## t\n\n```python\nimport no_such_module_xyz\n```\n", [("FP219", 4)]),
        (
            "## t\n\n```python\ndef a(): pass\n\ndef b(): pass\n```\n",
            [("FP211", 1)],
        ),
        ("## t\n\n```python\nx = 1\n```\n", [("FP211", 1)]),
        ("## t\n> function: nope\n\n```python\ndef t(): pass\n```\n", [("FP211", 1)]),
        ("## t\n\n```python\ndef t(*args: int): pass\n```\n", [("FP216", 4)]),
        (
            "## t\n> type: reference\n\n## t\n> type: reference\n",
            [("FP204", 4)],
        ),
    ],
)
def test_malformed_tools_md_gives_coded_diagnostics_with_lines(
    tmp_path: Path, text: str, expected: list[tuple[str, int]]
) -> None:
    path = tmp_path / "tools.md"
    path.write_text(text, encoding="utf-8")
    _tools, diagnostics = parse_tools_md(path, owner="task")
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    assert codes(errors) == expected
    assert all(d.file == str(path) and d.task == "task" for d in diagnostics)
    assert all(d.message for d in diagnostics)


def test_broken_tool_is_skipped_and_the_rest_survive(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## broken
        > type: shell

        ## fine
        > type: reference

        Fine.
        """,
    )
    tools, diagnostics = parse_tools_md(path, owner="")
    assert [t.name for t in tools] == ["fine"]
    assert codes(diagnostics) == [("FP209", 1)]


def test_unknown_metadata_key_is_a_warning_with_did_you_mean(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## t
        > type: http
        > url: https://example.org
        > metod: POST
        """,
    )
    tools, diagnostics = parse_tools_md(path, owner="")
    assert len(tools) == 1
    (warning,) = diagnostics
    assert (warning.code, warning.line, warning.severity) == ("FP207", 4, Severity.WARNING)
    assert "method" in (warning.hint or "")


def test_extra_code_block_is_a_warning(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## t
        > type: shell

        ```bash
        echo one
        ```

        ```bash
        echo two
        ```
        """,
    )
    (tool,), diagnostics = parse_tools_md(path, owner="")
    assert tool.code == "echo one\n"
    assert codes(diagnostics) == [("FP218", 8)]
    assert diagnostics[0].severity == Severity.WARNING


def test_unreadable_tools_md(tmp_path: Path) -> None:
    path = tmp_path / "tools.md"
    path.write_bytes(b"## t\n\xff\xfe\n")
    tools, diagnostics = parse_tools_md(path, owner="")
    assert tools == []
    assert codes(diagnostics) == [("FP217", None)]


def test_traceback_never_leaks_from_code_block_errors(tmp_path: Path) -> None:
    path = write_md(
        tmp_path,
        """
        ## t

        ```python
        raise RuntimeError("boom at load")
        ```
        """,
    )
    _, (diagnostic,) = parse_tools_md(path, owner="")
    assert diagnostic.code == "FP219"
    assert "RuntimeError: boom at load" in diagnostic.message
    assert "Traceback" not in diagnostic.message
    assert diagnostic.line == 4


# --------------------------------------------------------------------------- tools/ modules


def test_discover_tools_merges_tools_md_and_modules() -> None:
    folder = FIXTURES / "module_task"
    tools, diagnostics = discover_tools(folder, owner="module_task")
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == ["rank", "search_api", "word_count"]

    search = by_name["search_api"]
    assert search.kind == "python"
    assert search.module_file and search.module_file.endswith("search.py")
    assert search.function_name == "search"
    assert search.description == "Search the external API"
    assert search.metadata["retries"] == 2 and search.metadata["timeout"] == 5
    assert search.parameters["properties"]["query"] == {
        "type": "string",
        "description": "What to look for.",
    }
    assert "ctx" not in search.parameters["properties"]

    rank = by_name["rank"]
    assert rank.parameters["properties"]["order"]["enum"] == ["asc", "desc"]
    assert rank.description == "Sort items."

    found = {(d.code, Path(d.file or "").name, d.severity) for d in diagnostics}
    assert ("FP224", "tools.md", Severity.WARNING) in found  # tools/ wins the clash
    assert ("FP214", "broken.py", Severity.ERROR) in found
    assert ("FP215", "empty.py", Severity.WARNING) in found
    broken = next(d for d in diagnostics if d.code == "FP214")
    assert "ModuleNotFoundError" in broken.message and "package_that_does_not_exist_xyz" in (
        broken.message
    )
    assert broken.line == 3
    assert "Traceback" not in broken.message


def test_module_syntax_error_has_line(tmp_path: Path) -> None:
    tools_dir = tmp_path / "tools"
    tools_dir.mkdir()
    (tools_dir / "bad.py").write_text("x = 1\ndef f(:\n    pass\n")
    tools, diagnostics = discover_tools(tmp_path, owner="")
    assert tools == []
    assert codes(diagnostics) == [("FP214", 2)]
    assert "SyntaxError" in diagnostics[0].message


def test_two_tasks_with_same_module_name_do_not_collide(tmp_path: Path) -> None:
    for name, value in (("a", "alpha"), ("b", "beta")):
        folder = tmp_path / name / "tools"
        folder.mkdir(parents=True)
        (folder / "mod.py").write_text(
            "from prefect_folpipe import tool\n\n"
            f"@tool(description={value!r})\n"
            "def same() -> str:\n"
            f"    return {value!r}\n"
        )
    (a,), _ = discover_tools(tmp_path / "a", owner="a")
    (b,), _ = discover_tools(tmp_path / "b", owner="b")
    assert (a.description, b.description) == ("alpha", "beta")
    assert a.content_hash != b.content_hash


def test_edited_module_is_reimported(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    module = folder / "m.py"
    module.write_text(
        "from prefect_folpipe import tool\n\n@tool\ndef one() -> int:\n    return 1\n"
    )
    (first,), _ = discover_tools(tmp_path, owner="")
    module.write_text(
        "from prefect_folpipe import tool\n\n@tool\ndef two() -> int:\n    return 2\n"
    )
    (second,), _ = discover_tools(tmp_path, owner="")
    assert (first.name, second.name) == ("one", "two")


def test_duplicate_tool_names_across_modules(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    for stem in ("a", "b"):
        (folder / f"{stem}.py").write_text(
            "from prefect_folpipe import tool\n\n@tool(name='dup')\ndef f() -> int:\n    return 1\n"
        )
    tools, diagnostics = discover_tools(tmp_path, owner="")
    assert len(tools) == 1
    assert [(d.code, Path(d.file or "").name, d.line) for d in diagnostics] == [
        ("FP204", "b.py", 3)
    ]


def test_no_tools_at_all(tmp_path: Path) -> None:
    assert discover_tools(tmp_path, owner="") == ([], [])


def test_bom_and_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "tools.md"
    path.write_bytes(
        "\ufeff## first\r\n> type: reference\r\n\r\nOne.\r\n\r\n## second\r\n> type: shell\r\n"
        "\r\n```bash\r\necho two\r\n```\r\n".encode()
    )
    tools, diagnostics = parse_tools_md(path, owner="")
    assert diagnostics == []
    assert [(t.name, t.line) for t in tools] == [("first", 1), ("second", 6)]
    assert tools[1].code == "echo two\n"
