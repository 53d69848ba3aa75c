"""Loading the author's tool code: ``tools/*.py`` modules and tools.md python code blocks.

This is trusted workflow code (never model output). Each ``tools/`` folder becomes a synthetic
package named after a hash of its files, so modules can use relative imports
(``from ._helpers import x``), two tasks' ``tools/search.py`` never collide, and an edited file
is imported afresh. A tools.md code block becomes a module whose line numbers are those of the
tools.md file, so syntax errors and tracebacks point at the right line. Both run inside
``agentflow_imports()``, so code written for folpipe 0.1.8 can ``from agentflow import tool``.

Loading must never end the process: ``raise SystemExit(0)`` propagates as an exception the
loader reports (FP214 / FP219), and ``os._exit`` / ``os.abort`` raise ``SystemExit`` too while
the author's code is being executed here (otherwise ``validate --import-tools``, ``tree`` or
``run --json`` would exit 0 silently and CI would see success). ``folpipe validate`` without
``--import-tools`` does not execute this code at all (``loader.toolstatic``). What
module-level code prints goes to the ``prefect_folpipe.tools`` log, redacted
(``workflow.printed``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from ..._process.files import read_workflow_file
from ...authoring.agentflow import agentflow_imports
from ...workflow.printed import printed_to

LOG = logging.getLogger("prefect_folpipe.tools")
"""Where module-level code's output goes while it loads (redacted; never stdout)."""
PACKAGE_PREFIX = "_folpipe_tools_"
CODE_BLOCK_PREFIX = "_folpipe_toolsmd_"


def tools_dir_digest(tools_dir: Path) -> str:
    """sha256 over the path and the bytes of every ``.py`` file below ``tools_dir``."""
    digest = hashlib.sha256(str(tools_dir.resolve()).encode())
    for file in sorted(tools_dir.rglob("*.py")):
        if "__pycache__" in file.parts:
            continue
        digest.update(file.relative_to(tools_dir).as_posix().encode())
        digest.update(b"\0")
        try:
            digest.update(read_workflow_file(file))
        except OSError:  # a FIFO, say: reported by the module's own reading
            digest.update(b"\0unreadable")
    return digest.hexdigest()


def _package_for(tools_dir: Path, digest: str) -> str:
    name = f"{PACKAGE_PREFIX}{digest[:16]}"
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        package = importlib.util.module_from_spec(spec)
        package.__path__ = [str(tools_dir)]
        sys.modules[name] = package
    return name


def load_tools_module(module_file: str | Path, *, digest: str | None = None) -> types.ModuleType:
    """Import ``tools/<name>.py`` (re-used while the folder's files are unchanged)."""
    path = Path(module_file)
    tools_dir = path.parent
    package = _package_for(tools_dir, digest or tools_dir_digest(tools_dir))
    with (
        agentflow_imports(),
        exits_refused(),
        printed_to(LOG, f"tools/{path.name}"),
        no_bytecode_written(),
    ):
        return importlib.import_module(f"{package}.{path.stem}")


@contextlib.contextmanager
def no_bytecode_written() -> Iterator[None]:
    """Import the author's modules without writing ``__pycache__`` into the workflow folder:
    Python checks a cached file by the source's mtime (whole seconds) and size, so a module
    edited within the second it was cached, at the same size, would load stale."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def load_code_block(code: str, *, source_file: str, line: int) -> types.ModuleType:
    """Execute a tools.md python code block (starting at ``line``) as its own module."""
    from ...authoring import ToolContext, tool

    digest = hashlib.sha256(f"{source_file}\0{line}\0{code}".encode()).hexdigest()
    name = f"{CODE_BLOCK_PREFIX}{digest[:16]}"
    cached = sys.modules.get(name)
    if cached is not None:
        return cached
    module = types.ModuleType(name)
    module.__file__ = source_file
    module.__dict__.update({"ToolContext": ToolContext, "tool": tool})
    compiled = compile("\n" * (line - 1) + code, source_file, "exec")
    sys.modules[name] = module
    label = f"{Path(source_file).name}:{line}"
    try:
        with agentflow_imports(), exits_refused(), printed_to(LOG, label):
            exec(compiled, module.__dict__)  # the workflow author's own code, never model output
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _refusing(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: Any) -> NoReturn:
        shown = ", ".join(repr(arg) for arg in args)
        raise SystemExit(f"{name}({shown}) called while loading tool code")

    return refuse


@contextlib.contextmanager
def exits_refused() -> Iterator[None]:
    """While the author's module-level code runs: ``os._exit`` and ``os.abort`` raise
    ``SystemExit`` instead of ending the process (callers report it with a code)."""
    modules = [os, *(m for m in (sys.modules.get("posix"), sys.modules.get("nt")) if m)]
    saved = [
        (module, attr, getattr(module, attr))
        for module in modules
        for attr in ("_exit", "abort")
        if hasattr(module, attr)
    ]
    for module, attr, _ in saved:
        setattr(module, attr, _refusing(f"os.{attr}"))
    try:
        yield
    finally:
        for module, attr, original in saved:
            setattr(module, attr, original)


def describe_exception(exc: BaseException, source_file: str | Path) -> tuple[str, int | None]:
    """``"TypeName: message"`` and the line in ``source_file`` where it happened (if known)."""
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) == Path(source_file):
        return f"SyntaxError: {exc.msg}", exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and Path(frame.filename) == Path(source_file):
            line = frame.lineno
    return message, line
