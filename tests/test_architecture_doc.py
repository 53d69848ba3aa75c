"""docs/architecture.md names every module of the package under its folder, so a newcomer
finds every file from it (a new module without its line fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "prefect_folpipe"
DOC = ROOT / "docs" / "architecture.md"


def _listed() -> dict[str, set[str]]:
    text = DOC.read_text(encoding="utf-8")
    file_map = text.split("## File map", 1)[1].split("\n## ", 1)[0]
    listed: dict[str, set[str]] = {}
    for section in re.split(r"^### ", file_map, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        folder = heading.strip().strip("`")
        listed[folder] = set(re.findall(r"^\* `([\w.]+\.py)`", body, flags=re.M))
    return listed


def test_every_module_is_in_the_file_map() -> None:
    listed = _listed()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "templates" in path.parts:
            continue
        folder = path.parent.relative_to(ROOT).as_posix() + "/"
        if path.name not in listed.get(folder, set()):
            missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, "add to docs/architecture.md's file map: " + ", ".join(missing)


def test_the_file_map_names_no_module_that_is_gone() -> None:
    gone = [
        f"{folder}{name}"
        for folder, names in _listed().items()
        for name in names
        if not (ROOT / folder / name).exists()
    ]
    assert not gone, gone
