"""Every import of the package's own modules names something that exists, including imports
inside functions, which importing the modules never runs (import-linter skips them too)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "prefect_folpipe"


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str, str]]:
    here = _module_of(path)
    base = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            anchor = base[: len(base) - (node.level - 1)]
            module = ".".join(anchor + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        if module.split(".")[0] == "prefect_folpipe":
            found += [(node.lineno, module, alias.name) for alias in node.names]
    return found


def test_every_own_import_resolves() -> None:
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, module, name in _imports(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            if importlib.util.find_spec(module) is None:
                missing.append(f"{where}: no module {module}")
                continue
            imported = importlib.import_module(module)
            if name == "*" or hasattr(imported, name) or _is_submodule(imported, module, name):
                continue
            missing.append(f"{where}: {module} has no {name}")
    assert not missing, "\n".join(missing)


def _is_submodule(imported: object, module: str, name: str) -> bool:
    if not hasattr(imported, "__path__"):
        return False
    return importlib.util.find_spec(f"{module}.{name}") is not None
