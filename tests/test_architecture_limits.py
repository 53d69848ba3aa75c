"""The sizes a newcomer can take in: no module over 450 lines, no class over 200, no folder
with more than 24 modules side by side (the package, its tests and the benchmarks)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "prefect_folpipe"
MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 200
MAX_MODULES_PER_FOLDER = 24


def _modules(top: Path) -> list[Path]:
    return [p for p in top.rglob("*.py") if "fixtures" not in p.relative_to(ROOT).parts]


def test_no_module_is_over_450_lines() -> None:
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in _modules(PACKAGE)}
    assert sizes, "no modules found"
    over = {str(p.relative_to(ROOT)): n for p, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, over


def test_no_class_is_over_200_lines() -> None:
    over: dict[str, int] = {}
    for path in _modules(PACKAGE):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    over[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert not over, over


def test_no_folder_has_more_than_24_modules() -> None:
    folders: dict[Path, int] = {}
    for top in (PACKAGE, ROOT / "tests", ROOT / "benchmarks"):
        for path in _modules(top):
            folders[path.parent] = folders.get(path.parent, 0) + 1
    assert len(folders) > 10, folders
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder, count in folders.items()
        if count > MAX_MODULES_PER_FOLDER
    }
    assert not crowded, crowded


def test_no_module_name_is_in_three_packages() -> None:
    homes: dict[str, set[Path]] = {}
    for path in _modules(PACKAGE):
        if path.name != "__init__.py":
            homes.setdefault(path.name, set()).add(path.parent)
    repeated = {name: sorted(map(str, dirs)) for name, dirs in homes.items() if len(dirs) >= 3}
    assert not repeated, repeated
