"""Nothing in the repository cites a document that is not in it: no tracked file names the team's
architecture notes or design document by section, or points at a folder beside the checkout.
Say it in our own words, or link our own docs (docs/format.md, docs/running.md, ...)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
SECTION = "\N{SECTION SIGN}"
FORBIDDEN = {
    "the architecture notes": "ARCHITECT" + "URE",
    "a section sign": SECTION,
    "a spec section": r"\bspec\s*" + SECTION,
    "the possessive spec": r"\bthe spec" + "'s\\b",
    "a folder beside the checkout": r"\.\./+" + "shared",
}


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    return [REPO / name for name in done.stdout.decode().split("\0") if name]


def offending_lines(text: str) -> list[tuple[int, str, str]]:
    """``(line, what, text)`` of every forbidden citation in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            if re.search(pattern, line, re.IGNORECASE if what == "the possessive spec" else 0):
                found.append((number, what, line.strip()))
    return found


def test_no_tracked_file_cites_an_outside_document() -> None:
    problems = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        problems += [
            f"{path.relative_to(REPO)}:{n}: {what}: {line}"
            for n, what, line in offending_lines(text)
        ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "line",
    [
        "see ARCHIT" + "ECTURE notes",
        "the spec " + SECTION + "2.10 says",
        "as spec" + SECTION + "14.2 allows",
        "(" + SECTION + "8.1)",
        "The spec" + "'s original runner",
        "`.." + "/shared/notes.md`",
    ],
)
def test_each_kind_of_citation_is_caught(line: str) -> None:
    assert offending_lines(line)


def test_our_own_words_pass() -> None:
    assert not offending_lines('the shared/ folder; docs/format.md, "Outputs"; a spec object')
