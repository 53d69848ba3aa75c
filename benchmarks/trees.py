"""Generated trees unlike the project's own examples: other shapes, sizes, names and tools.
Every tree runs offline with the scripted provider it ships.

* ``load_tree``: the loading benchmark's tree (1,000 tasks, each with a task.yaml with typed
  outputs and settings, an instructions.md and a one-tool tools.md);
* ``wide_tree``: 10 branches x 99 leaves whose leaves call a tool before answering;
* ``wide_group``: one parallel group of N leaves;
* ``random_tree``: a seeded random tree (execution types, skip_if, graphs, loops, passes
  around children, python/shell/reference tools, odd names) for behaviour tests.

Self-contained (no imports from this package): tests import it to build trees.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

WORDS = tuple(
    [
        "ingest",
        "quarry",
        "talon",
        "mosaic",
        "ferrous",
        "lumen",
        "oxbow",
        "zephyr",
        "glyph",
        "cobalt",
        "brine",
        "harrow",
        "nimbus",
        "quill",
        "rampart",
        "sorrel",
        "tundra",
        "umber",
        "vellum",
        "wicket",
        "yarrow",
        "azimuth",
        "bramble",
        "cinder",
    ]
)


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    """Write ``{relative path: text or YAML-able data}`` under ``root``."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        target.write_text(text, encoding="utf-8")
    return root


def _scripted_root(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "providers": {"default": "scripted", "scripted": {"replies": "replies.yaml"}},
        **extra,
    }


def python_tool(name: str, doc: str) -> str:
    """A tools.md with one python tool ``name`` (what most authors write)."""
    return (
        f"# Tools\n\n## {name}\n> type: python\n> retries: 1\n\n{doc}\n\n"
        "```python\n"
        f"def {name}(ctx: ToolContext, query: str, limit: int = 3) -> dict:\n"
        '    """Look the query up.\n\n    Args:\n        query: What to look for.\n'
        '        limit: At most this many hits.\n    """\n'
        '    return {"query": query, "hits": list(range(limit))}\n'
        "```\n"
    )


def shell_tool(name: str) -> str:
    """A tools.md with one shell tool ``name`` reading ``$QUERY``."""
    return (
        f"## {name}\n> type: shell\n> timeout: 20\n\nCount the letters of a query.\n\n"
        '```bash\nprintf "%s" "${QUERY}" | wc -c\n```\n'
    )


def _leaf_yaml(index: int, *, outputs: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "description": f"leaf {index}",
        "settings": {"max_retries": index % 3, "timeout": 120 + index % 7},
        "agent": {"temperature": round((index % 10) / 10, 1)},
    }
    if outputs:
        data["output"] = {"answer": "str", "score": "float", "tags": "list"}
    return data


def load_tree(root: Path, branches: int = 10, leaves: int = 99) -> Path:
    """The loading benchmark's tree: a root, ``branches`` branches of ``leaves`` leaves (1,000
    tasks by default with the root excluded), each task with a task.yaml (settings, typed
    outputs), an instructions.md and a one-tool tools.md (a python tool)."""
    files: dict[str, Any] = {
        "task.yaml": _scripted_root(
            "load-bench", settings={"max_retries": 2, "timeout": 600, "parallel_workers": 16}
        ),
        "replies.yaml": {"default": "ok"},
        "instructions.md": "Coordinate the survey.\n",
        "tools.md": python_tool("survey_index", "Index of the survey."),
    }
    for b in range(branches):
        branch = f"subtasks/{b:02d}_{WORDS[b % len(WORDS)]}-{b}"
        files[f"{branch}/task.yaml"] = {
            "description": f"branch {b}",
            "settings": {"parallel_workers": 8, "timeout": 900},
            "output": {"summary": "str"},
        }
        files[f"{branch}/instructions.md"] = f"Summarise branch {b}.\n"
        files[f"{branch}/tools.md"] = python_tool(f"branch_lookup_{b}", f"Lookups of {b}.")
        for i in range(leaves):
            leaf = f"{branch}/subtasks/{i:03d}_{WORDS[(b + i) % len(WORDS)]}_{i}"
            files[f"{leaf}/task.yaml"] = _leaf_yaml(i)
            files[f"{leaf}/instructions.md"] = f"Answer question {b}.{i} with a score.\n"
            files[f"{leaf}/tools.md"] = python_tool(f"probe_{b}_{i}", f"Probe {b}.{i}.")
    return write_tree(root, files)


def wide_tree(
    root: Path, branches: int = 10, leaves: int = 99, latency: float = 0.0, tool: str = "python"
) -> Path:
    """``branches`` parallel branches x ``leaves`` parallel leaves; every leaf
    calls its tool once (``python`` or ``shell``) and then answers."""
    tools_md = python_tool("probe", "Probe.") if tool == "python" else shell_tool("probe")
    arguments = {"query": "prefect"}
    files: dict[str, Any] = {
        "task.yaml": _scripted_root("wide-tree"),
        "replies.yaml": {
            "latency_s": latency,
            "default": [{"tool_calls": [{"name": "probe", "arguments": arguments}]}, "done"],
        },
    }
    for b in range(branches):
        branch = f"subtasks/{b:02d}_{WORDS[b % len(WORDS)]}"
        files[f"{branch}/task.yaml"] = {"description": f"branch {b}"}
        for i in range(leaves):
            leaf = f"{branch}/subtasks/{i:03d}_q{i}"
            files[f"{leaf}/instructions.md"] = f"Probe {b}.{i}, then say done.\n"
            files[f"{leaf}/tools.md"] = tools_md
    return write_tree(root, files)


def wide_group(root: Path, count: int = 500, latency: float = 0.0) -> Path:
    """One parallel group of ``count`` leaves."""
    files: dict[str, Any] = {
        "task.yaml": _scripted_root("wide-group", settings={"parallel_workers": count}),
        "replies.yaml": {"default": "ok", "latency_s": latency},
    }
    for i in range(count):
        files[f"subtasks/{i:04d}_{WORDS[i % len(WORDS)]}_{i}/instructions.md"] = f"Item {i}.\n"
    return write_tree(root, files)


def random_tree(root: Path, seed: int, size: int = 40) -> Path:
    """A seeded random tree of about ``size`` tasks mixing every execution type, skip_if,
    passes around children, declared outputs, python / shell / reference tools, and names
    with prefixes, dashes and digits. Replies answer declared outputs; a third of the
    leaves with a python tool call it first."""
    rng = random.Random(seed)
    replies: dict[str, Any] = {}
    files: dict[str, Any] = {
        "task.yaml": _scripted_root(f"random-{seed}", context={"flag": rng.choice([True, False])}),
        "tools.md": python_tool("root_probe", "Probe from the root."),
    }
    _random_branch(rng, files, replies, ("", ""), 0, [size])
    files["replies.yaml"] = {"default": "ok", "tasks": replies}
    return write_tree(root, files)


def _random_branch(
    rng: random.Random,
    files: dict[str, Any],
    replies: dict[str, Any],
    where: tuple[str, str],
    depth: int,
    budget: list[int],
) -> None:
    """Children under ``where`` = (folder prefix, task path)."""
    base, path = where
    kinds = ["parallel", "sequential", "graph", "priority_groups", "loop"]
    kind = rng.choice(kinds) if depth else rng.choice(kinds[:3])
    subtasks: dict[str, Any] = {"execution_type": kind}
    if kind == "loop":
        subtasks |= {"max_iterations": 2, "until": "context.get('never') == true"}
        subtasks["on_max_iterations"] = "succeed_with_last"
    files.setdefault(f"{base}task.yaml", {})["subtasks"] = subtasks
    count = rng.randint(4, 7) if depth == 0 else rng.randint(2, 5)
    names = [f"{WORDS[rng.randrange(len(WORDS))]}_{depth}{i}" for i in range(count)]
    for i, name in enumerate(names):
        budget[0] -= 1
        folder = f"{base}subtasks/{i + 1:02d}_{name.replace('_', '-', 1)}/"
        child_path = f"{path}/{name}" if path else name
        child: dict[str, Any] = {"name": name}
        if kind == "graph" and i:
            child["depends_on"] = [names[rng.randrange(i)]]
        if kind == "priority_groups":
            child["priority"] = rng.randint(1, 3)
        if rng.random() < 0.2:
            child["conditions"] = {"skip_if": "context.flag == true"}
        files[f"{folder}task.yaml"] = child
        if depth < 3 and budget[0] > 0 and rng.random() < 0.5:
            if rng.random() < 0.5:
                files[f"{folder}instructions.md"] = f"Plan {name} before its parts.\n"
            _random_branch(rng, files, replies, (folder, child_path), depth + 1, budget)
            continue
        files[f"{folder}instructions.md"] = f"Work on {name}.\n"
        answer: list[Any] = []
        if rng.random() < 0.3:
            child["output"] = {f"{name}_value": "str"}
            answer = [{"output": {f"{name}_value": f"{name} at {depth}"}}]
        roll = rng.random()
        if roll < 0.2:
            tool = f"probe_{depth}{i}"
            files[f"{folder}tools.md"] = python_tool(tool, "Probe.")
            if roll < 0.1:
                call = {"tool_calls": [{"name": tool, "arguments": {"query": name}}]}
                answer = [call, *(answer or [f"{name} probed"])]
        elif roll < 0.3:
            files[f"{folder}tools.md"] = shell_tool(f"count_{depth}{i}")
        elif roll < 0.4:
            files[f"{folder}tools.md"] = f"## notes_{depth}{i}\n> type: reference\n\nNotes.\n"
        if answer:
            replies[child_path] = answer
