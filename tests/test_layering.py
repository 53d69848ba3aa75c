"""The one-way pipeline is a failing check: Prefect and the model SDKs stay in their corners."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "prefect_folpipe"

# module prefix -> package paths (relative to prefect_folpipe/) allowed to import it
ALLOWED: dict[str, tuple[str, ...]] = {
    "prefect": ("compile/", "cli/", "deploy/", "flows.py"),
    "prefect_dask": ("compile/", "deploy/"),
    "anthropic": ("providers/anthropic.py",),
    "openai": ("providers/openai.py",),
    "ollama": ("providers/ollama.py",),
    "mcp": ("tools/mcp.py",),
}


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_restricted_imports_stay_in_their_modules() -> None:
    offenders = []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(PACKAGE).as_posix()
        roots = _imported_roots(ast.parse(file.read_text(encoding="utf-8")))
        for module, allowed in ALLOWED.items():
            if module in roots and not rel.startswith(allowed):
                offenders.append(f"{rel} imports {module}")
    assert not offenders, "layering violated:\n" + "\n".join(offenders)


def test_importing_the_package_does_not_import_prefect() -> None:
    import subprocess
    import sys

    code = (
        "import sys, prefect_folpipe, prefect_folpipe.errors, prefect_folpipe.workflow; "
        "print('prefect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
