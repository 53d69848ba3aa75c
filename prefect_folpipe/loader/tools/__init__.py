"""Tools of a task folder, read from ``tools.md`` and ``tools/*.py``: the markdown layer, the
static reading ``folpipe validate`` uses (and caches), and loading the author's code for a run.
"""

from __future__ import annotations

from ._code import exits_refused, load_code_block, load_tools_module
from ._defs import diagnostic
from ._modules import discover_module_tools, discover_tools, mentions_tool
from ._toolsmd import parse_tools_md

__all__ = [
    "diagnostic",
    "discover_module_tools",
    "discover_tools",
    "exits_refused",
    "load_code_block",
    "load_tools_module",
    "mentions_tool",
    "parse_tools_md",
]
