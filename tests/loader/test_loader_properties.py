"""Property tests: random task trees round-trip through the loader; garbage never crashes it."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefect_folpipe.errors import Diagnostic, WorkflowValidationError
from prefect_folpipe.validate import load_workflow, validate_workflow
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Task

pytestmark = pytest.mark.slow  # property runs, seconds each

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]


@dataclass
class Node:
    """A generated task folder and what the loader should make of it."""

    base: str
    prefix: int | None
    explicit_name: str | None
    priority: int | None
    enabled: bool
    instructions: bool
    children: list[Node] = field(default_factory=list)

    @property
    def folder(self) -> str:
        return f"{self.prefix}_{self.base}" if self.prefix is not None else self.base

    @property
    def name(self) -> str:
        return self.explicit_name or self.base

    @property
    def expected_priority(self) -> int:
        if self.priority is not None:
            return self.priority
        return self.prefix if self.prefix is not None else 50


@st.composite
def nodes(draw: st.DrawFn, depth: int = 0, base: str = "root") -> Node:
    count = draw(st.integers(0, 4 if depth < 3 else 0))
    bases = draw(st.lists(st.sampled_from(WORDS), min_size=count, max_size=count, unique=True))
    children = [draw(nodes(depth + 1, b)) for b in bases]
    return Node(
        base=base,
        prefix=draw(st.none() | st.integers(0, 99)) if depth else None,
        explicit_name=draw(st.none() | st.just(f"{base}_named")),
        priority=draw(st.none() | st.integers(-5, 120)),
        enabled=draw(st.booleans()) if depth else True,
        instructions=draw(st.booleans()),
        children=children,
    )


def write_tree(node: Node, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config: dict[str, object] = {}
    if node.explicit_name:
        config["name"] = node.explicit_name
    if node.priority is not None:
        config["priority"] = node.priority
    if not node.enabled:
        config["enabled"] = False
    if config or not node.instructions:
        (folder / "task.yaml").write_text(yaml.safe_dump(config) if config else "")
    if node.instructions:
        (folder / "instructions.md").write_text(f"Do {node.name}.\n")
    for child in node.children:
        write_tree(child, folder / "subtasks" / child.folder)


def expected_order(children: list[Node]) -> list[Node]:
    return sorted(children, key=lambda c: (c.expected_priority, c.folder))


def check_same(task: Task, node: Node, path: str) -> None:
    assert task.path == path
    assert task.priority == node.expected_priority or not path
    ordered = expected_order(node.children)
    enabled = [c for c in ordered if c.enabled]
    disabled = [c for c in ordered if not c.enabled]
    assert [c.name for c in task.children] == [c.name for c in enabled]
    assert [c.name for c in task.disabled_children] == [c.name for c in disabled]
    assert (task.instructions is not None) == node.instructions
    expected_kind = ("both" if node.instructions else "branch") if enabled else "leaf"
    assert task.kind == expected_kind
    loaded = [*task.children, *task.disabled_children]
    for child_task, child in zip(loaded, enabled + disabled, strict=True):
        check_same(child_task, child, f"{path}/{child.name}" if path else child.name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes())
def test_random_trees_round_trip(root: Node) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "root"
        write_tree(root, folder)
        workflow = load_workflow(folder)
        assert workflow.name == root.name
        check_same(workflow.root, root, "")
        assert all(w.code in {"FP115"} for w in workflow.warnings)


YAML_TOKENS = st.sampled_from(
    [
        *"ab:_-[]{},'\"#&*!|>%@` \n\t09.",
        "\n  ",
        "settings: ",
        "subtasks:",
        "- ",
        "&a ",
        "*a",
        "<<: ",
        "!!set ",
        "name: ",
        "output:\n  x: ",
        "  ",
        "---\n",
        "? ",
        "{% include",
    ]
)
GARBAGE_YAML = st.lists(YAML_TOKENS, max_size=40).map("".join)
KEYS = st.sampled_from([*TaskConfig.model_fields, "settings", "subtasks", "bogus", "max_retrys"])
SCALARS = st.none() | st.booleans() | st.integers(-3, 1000) | st.floats(allow_nan=True)
SCALARS = SCALARS | st.text(max_size=12)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(KEYS | st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


def assert_validates_without_crashing(task_yaml: bytes, instructions: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "task.yaml").write_bytes(task_yaml)
        (root / "subtasks" / "child").mkdir(parents=True)
        (root / "subtasks" / "child" / "task.yaml").write_bytes(task_yaml)
        (root / "subtasks" / "child" / "instructions.md").write_bytes(instructions)
        diagnostics = validate_workflow(root)
        assert all(isinstance(d, Diagnostic) for d in diagnostics)
        assert not [d for d in diagnostics if d.code == "FP190"], diagnostics
        try:
            load_workflow(root)
        except WorkflowValidationError as exc:
            assert exc.diagnostics


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=60))
def test_random_bytes_never_crash_the_validator(task_yaml: bytes, instructions: bytes) -> None:
    assert_validates_without_crashing(task_yaml, instructions)


@settings(max_examples=40, deadline=None)
@given(GARBAGE_YAML)
def test_garbage_yaml_never_crashes_the_validator(text: str) -> None:
    assert_validates_without_crashing(text.encode(), b"{% include 'x' %} {% include")


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_random_task_yaml_mappings_never_crash_the_validator(data: dict) -> None:
    text = yaml.safe_dump(data, allow_unicode=True)
    assert_validates_without_crashing(text.encode(), b"Do it.")


@st.composite
def settings_trees(draw: st.DrawFn, depth: int = 0) -> dict:
    """A tree of optional settings: each level may set max_retries / timeout / tags."""
    count = draw(st.integers(0, 3 if depth < 3 else 0))
    return {
        "max_retries": draw(st.none() | st.integers(0, 9)),
        "timeout": draw(st.none() | st.sampled_from([-1, 5, 30.5, 600])),
        "tags": draw(st.none() | st.lists(st.sampled_from(["a", "b", "c"]), max_size=2)),
        "children": [draw(settings_trees(depth + 1)) for _ in range(count)],
    }


def write_settings_tree(node: dict, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    own = {k: node[k] for k in ("max_retries", "timeout", "tags") if node[k] is not None}
    (folder / "task.yaml").write_text(yaml.safe_dump({"settings": own}) if own else "")
    (folder / "instructions.md").write_text("x")
    for index, child in enumerate(node["children"]):
        write_settings_tree(child, folder / "subtasks" / f"c{index}")


def check_cascade(task: Task, node: dict, inherited: dict) -> None:
    merged = {**inherited, **{k: v for k, v in node.items() if k != "children" and v is not None}}
    timeout = merged.get("timeout", DEFAULT_TIMEOUT)  # the defaults when nothing says
    assert task.settings.max_retries == merged.get("max_retries", DEFAULT_MAX_RETRIES)
    assert task.settings.timeout == (None if timeout in (None, -1) else timeout)
    assert task.settings.tags == tuple(merged.get("tags", ()))
    for child_task, child in zip(task.children, node["children"], strict=True):
        check_cascade(child_task, child, merged)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(settings_trees())
def test_settings_cascade_nearest_ancestor_wins(tree: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "root"
        write_settings_tree(tree, folder)
        check_cascade(load_workflow(folder).root, tree, {})
