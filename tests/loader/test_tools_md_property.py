"""Property: parse_tools_md never raises, whatever the tools.md looks like."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefect_folpipe.errors import Diagnostic
from prefect_folpipe.loader.tools import _markdown as markdown
from prefect_folpipe.loader.tools._toolsmd import parse_tools_md
from prefect_folpipe.workflow.tree import ToolSpec

pytestmark = pytest.mark.slow  # property runs, seconds each

SAFE_PYTHON = [
    "def t(x: int) -> int:\n    return x\n",
    "def t(x: int) -> int:\n    return x +\n",
    "def a(): pass\ndef b(): pass\n",
    "def t(*args): pass\n",
    "x = 1\n",
    "raise ValueError('at load')\n",
    "async def t(ctx: ToolContext, q: str | None = None) -> str:\n    return ''\n",
    "def t(q: Undefined) -> None: ...\n",
]
FENCES = ["```", "~~~", "````", "```python", "```bash", "~~~sh"]
META_KEYS = [
    "type",
    "scope",
    "timeout",
    "retries",
    "url",
    "method",
    "headers",
    "params",
    "server",
    "tool",
    "function",
    "tpye",
    "",
]
META_VALUES = [
    "python",
    "shell",
    "http",
    "mcp",
    "reference",
    "local",
    "shared",
    "-1",
    "2.5",
    "{a: [",
    "[1, 2]",
    '{"A": "b"}',
    "GET",
    "FETCH",
    "x (str), y (int, default=1)",
    "a (nope)",
    "",
]

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
line = st.one_of(
    text,
    st.builds(lambda n: f"## {n}", text),
    st.builds(lambda k, v: f"> {k}: {v}", st.sampled_from(META_KEYS), st.sampled_from(META_VALUES)),
    st.builds(lambda t: f"> {t}", text),
    st.sampled_from(FENCES),
    st.sampled_from(
        [
            "**Parameters:**",
            "- a (int, default=3): x",
            "- (",
            "- b (list[str])",
            "  continued",
            "* c: d",
        ]
    ),
    st.sampled_from(SAFE_PYTHON),
    st.just(""),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, max_size=30))
def test_parse_tools_md_never_raises(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tools.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        tools, diagnostics = parse_tools_md(path, owner="x")
    assert all(isinstance(tool, ToolSpec) for tool in tools)
    assert all(isinstance(d, Diagnostic) and d.code.startswith("FP2") for d in diagnostics)
    assert len({tool.name for tool in tools}) == len(tools)


fence_like = st.builds(
    lambda indent, marker, rest: " " * indent + marker + rest,
    st.integers(0, 6),
    st.sampled_from(["`", "``", "```", "````", "~", "~~~", "~~~~", "`~`", "#", ""]),
    st.one_of(text, st.sampled_from(["", "python", " bash ", "x`y", "~~~"])),
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(fence_like, text))
def test_the_fence_shortcut_matches_the_regex(line_text: str) -> None:
    """``markdown._fence`` skips the regex for lines that cannot be a fence; it must find
    exactly the fences the regex finds (indents of 0-3 spaces, ``` or ~~~, any info)."""
    shortcut = markdown._fence(line_text)
    full = markdown._FENCE.match(line_text)
    assert (shortcut is None) == (full is None)
    if full is not None:
        assert shortcut is not None and shortcut.groupdict() == full.groupdict()
