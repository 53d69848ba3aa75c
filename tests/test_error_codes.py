"""Every error code used in the package is documented exactly once in docs/error-codes.md."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).parent.parent
PACKAGE = REPO / "prefect_folpipe"
TABLE = REPO / "docs" / "error-codes.md"

CODE = re.compile(r"\bFP\d{3}\b")
TABLE_ROW = re.compile(r"^\|\s*`?(FP\d{3})`?\s*\|", re.MULTILINE)
BASE_CODE = "FP000"
"""``FolpipeError.code``: the abstract base's placeholder, never reported for a real problem."""


def used_codes() -> dict[str, list[str]]:
    """code -> files of the package that mention it."""
    found: dict[str, list[str]] = {}
    for file in sorted(PACKAGE.rglob("*.py")):
        for code in set(CODE.findall(file.read_text(encoding="utf-8"))):
            found.setdefault(code, []).append(file.relative_to(REPO).as_posix())
    found.pop(BASE_CODE, None)
    return found


def documented_codes() -> Counter[str]:
    return Counter(TABLE_ROW.findall(TABLE.read_text(encoding="utf-8")))


def test_every_used_code_is_documented() -> None:
    documented = documented_codes()
    missing = {code: files for code, files in used_codes().items() if code not in documented}
    assert not missing, "codes used but not in docs/error-codes.md:\n" + "\n".join(
        f"  {code}: {', '.join(files)}" for code, files in sorted(missing.items())
    )


def test_no_code_is_documented_twice() -> None:
    twice = sorted(code for code, count in documented_codes().items() if count > 1)
    assert not twice, f"listed more than once in docs/error-codes.md: {twice}"


def test_codes_sit_in_the_section_of_their_range() -> None:
    section = None
    misplaced = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^##\s+FP(\d)xx", line)
        if heading:
            section = heading.group(1)
            continue
        row = TABLE_ROW.match(line)
        if row and section is not None and row.group(1)[2] != section:
            misplaced.append(row.group(1))
    assert not misplaced, f"codes under the wrong FPnxx heading: {misplaced}"


def test_the_scanner_sees_the_codes_of_the_exception_tree() -> None:
    assert {"FP100", "FP200", "FP320"} <= set(used_codes())
