"""What a folder holds never drives the user's terminal: a task folder named with escape
sequences (set the window title, clear the screen) was printed as it is by ``tree``,
``graph`` and ``plan``, and a task's description too."""

from __future__ import annotations

import io
from pathlib import Path

from builders import write_workflow
from click.testing import CliRunner

from prefect_folpipe.cli import cli
from prefect_folpipe.cli._render import SafeConsole
from prefect_folpipe.validate import validate_workflow

TITLE_AND_CLEAR = "\x1b]0;pwned\x07\x1b[2J"


def test_a_folder_or_name_with_control_characters_is_refused(tmp_path: Path) -> None:
    root = write_workflow(
        tmp_path / "wf",
        {
            "instructions.md": "Coordinate.",
            f"subtasks/a{TITLE_AND_CLEAR}b/instructions.md": "Do.",
            "subtasks/c/instructions.md": "Do.",
            "subtasks/c/task.yaml": {"name": "c\u202egnp.exe"},  # a bidirectional override
        },
    )
    found = {d.code: d for d in validate_workflow(root)}
    assert found["FP123"].file == "subtasks/a\\x1b]0;pwned\\x07\\x1b[2Jb"
    assert "\\u202e" in found["FP116"].message
    assert not any("\x1b" in str(d) for d in found.values())


def test_printed_text_shows_control_characters_as_escapes(tmp_path: Path) -> None:
    root = write_workflow(
        tmp_path / "wf",
        {
            "instructions.md": "Coordinate.",
            "subtasks/a/instructions.md": "Do.",
            "subtasks/a/task.yaml": {"description": f"red{TITLE_AND_CLEAR}\u202eend"},
        },
    )
    for args in (["tree", str(root)], ["graph", str(root)], ["plan", str(root)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output
        assert "\u202e" not in result.output
    assert "\\x1b[2J" in CliRunner().invoke(cli, ["tree", str(root)]).output


def test_styles_still_reach_a_terminal() -> None:
    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="standard", highlight=False)
    console.print("[red]warned[/red]", "\x1b[2J")
    assert "\x1b[31m" in out.getvalue()  # rich's own colour
    assert "\x1b[2J" not in out.getvalue() and "\\x1b[2J" in out.getvalue()
