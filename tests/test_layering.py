"""The one-way pipeline is a failing check: Prefect and the model SDKs stay in their corners."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # import-linter and fresh interpreters, seconds each

PACKAGE = Path(__file__).parent.parent / "prefect_folpipe"

# module prefix -> package paths (relative to prefect_folpipe/) allowed to import it
ALLOWED: dict[str, tuple[str, ...]] = {
    "prefect": ("compile/", "cli/", "deploy/", "flows.py"),
    "prefect_dask": ("compile/", "deploy/"),
    "anthropic": ("providers/anthropic.py",),
    "openai": ("providers/openai.py",),
    "ollama": ("providers/ollama.py",),
    "mcp": ("tools/mcp.py",),
    "opentelemetry": ("telemetry/",),
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
    code = (
        "import sys, prefect_folpipe, prefect_folpipe.errors, prefect_folpipe.workflow; "
        "print('prefect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- import-linter

ROOT = PACKAGE.parent
PLUGIN_LOADERS = (
    "providers/classes.py",  # provider adapters, entry points and `module:` classes
    "loader/tools/_code.py",  # the workflow author's tools/*.py modules
    "cli/__init__.py",  # the CLI's subcommands, loaded on first use
    "tools/toolbox.py",  # tool-kind runners (http, mcp) registered on import
)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run the pyproject.toml contracts over the package found under ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [
        sys.executable,
        "-c",
        "from importlinter.cli import lint_imports_command; lint_imports_command()",
        "--no-cache",
    ]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_import_linter_contracts_are_kept() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("workflow/tree.py", "from ..compile import build as _upward", "down the pipeline"),
        ("plan/_plan.py", "from ..compile import options as _upward", "down the pipeline"),
        ("loader/_yaml.py", "import prefect as _prefect", "Prefect only in"),
        ("plan/execution/_graph.py", "import prefect.states as _prefect_side", "Prefect only in"),
        ("agent/loop.py", "import openai as _sdk", "openai only in its adapter"),
        ("validate/_common.py", "from ..loader import _yaml as _private", "private modules"),
        ("compile/executor.py", "from .checkpoints import _restore as _private", "private modules"),
    ],
)
def test_a_wrong_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    shutil.copytree(PACKAGE, tmp_path / "prefect_folpipe", ignore=_NO_CACHE)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "prefect_folpipe" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0
    broken = [row for row in done.stdout.splitlines() if " BROKEN" in row]
    assert any(contract in row for row in broken), done.stdout[-3000:]


_NO_CACHE = shutil.ignore_patterns("__pycache__")


def test_import_module_only_where_plugins_are_loaded() -> None:
    offenders = []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(PACKAGE).as_posix()
        if rel in PLUGIN_LOADERS:
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _callee(node) in ("import_module", "__import__"):
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, "import_module outside the plug-in loaders: " + ", ".join(offenders)


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
