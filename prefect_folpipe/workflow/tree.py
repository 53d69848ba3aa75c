"""The loaded, resolved workflow tree: immutable values the rest of the package reads.

``validate.load_workflow`` builds these; nothing downstream touches the filesystem layout again
except through the paths recorded here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from .config import ExecutionType, HttpHook, OnError, OnMaxIterations, ProviderConfig, TaskConfig

ToolKind = Literal["python", "shell", "http", "mcp", "reference"]
ToolOrigin = Literal["own", "shared", "inherited"]
TaskKind = Literal["leaf", "branch", "both"]

DEFAULT_PRIORITY = 50
DEFAULT_MAX_TURNS = 20
DEFAULT_OUTPUT_RETRIES = 2
DEFAULT_TOOL_RESULT_MAX_CHARS = 20_000
DEFAULT_TOOL_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 2
"""Retries when no task.yaml says ``max_retries`` (3 attempts, as folpipe 0.1.8 made)."""
DEFAULT_TIMEOUT = 300.0
"""Seconds per attempt when no task.yaml says ``timeout`` (folpipe 0.1.8's default). Not
applied to a loop task, whose ``timeout`` bounds the whole loop."""
TRANSIENT_ERRORS: tuple[str, ...] = ("rate_limit", "server_error", "timeout", "TimeoutError")
"""What the default retries retry: provider rate limits, server errors and time-outs, and
task time-outs. An explicit ``max_retries`` retries every retryable error (or ``retry_on``)."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as declared in tools.md, tools/*.py or shared/tools.md."""

    name: str
    kind: ToolKind
    description: str
    parameters: Mapping[str, Any]
    """JSON Schema (type object) of the arguments the model passes."""
    source_file: str
    """Absolute path of the file declaring the tool."""
    line: int | None = None
    code: str | None = None
    """python: the function source (tools.md); shell: the script."""
    code_line: int | None = None
    """tools.md: line of the code block's first line (so tracebacks point into tools.md)."""
    module_file: str | None = None
    """tools/*.py: the module file holding the ``@tool`` function."""
    function_name: str | None = None
    """python: name of the function to call (tools.md code block or module)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Blockquote metadata (method, url, headers, server, tool, timeout, retries, ...)."""
    scope: Literal["shared", "local"] = "shared"
    origin: ToolOrigin = "own"
    owner: str = ""
    """Path of the task that declares it (``""`` = root; ``"<shared>"`` for shared tools)."""
    content_hash: str = ""
    """sha256 of what the tool runs (code, module file, metadata): part of cache keys."""

    @property
    def executable(self) -> bool:
        """Reference tools are described to the model but cannot be called."""
        return self.kind != "reference"


@dataclass(frozen=True)
class EffectiveSettings:
    """Settings after the cascade, with defaults filled in."""

    max_retries: int = 0
    retry_delay_seconds: float | tuple[float, ...] = 1.0
    timeout: float | None = None
    """Seconds per attempt (the whole loop for a loop); ``None``: no limit (never ``-1``/``0``)."""
    parallel_workers: int | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    output_retries: int = DEFAULT_OUTPUT_RETRIES
    tool_result_max_chars: int = DEFAULT_TOOL_RESULT_MAX_CHARS
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    tool_retries: int = 0
    branch_as: Literal["subflow", "task"] | None = None
    token_budget: int | None = None
    cost_budget: float | None = None
    rate_limit: Mapping[str, Any] | None = None
    task_runner: Literal["default", "dask"] = "default"
    dask_address: str | None = None
    cache: bool = True
    cache_across_runs: bool | None = None
    """``settings.cache.across_runs``; ``None``: local runs reuse, deployment runs do not."""
    cache_expiration: float | None = None
    """Seconds a checkpoint is reused by later runs (``cache.ttl`` or ``cache_expiration``)."""
    tags: tuple[str, ...] = ()
    retry_on: tuple[str, ...] | None = None
    allow_sensitive_files: bool = False
    allow_private_network: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for ``folpipe tree --json``."""
        from dataclasses import asdict

        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, tuple):
                data[key] = list(value)
        return data


@dataclass(frozen=True)
class ResolvedProvider:
    """The provider a task uses after resolution: block name + merged settings."""

    name: str
    """Key of the providers block (``claude``), or the built-in name."""
    type: str
    """Adapter: anthropic | openai | ollama | scripted | replay | custom."""
    config: ProviderConfig
    """Root block deep-merged with the task's ``agent`` overrides."""

    @property
    def model(self) -> str | None:
        return self.config.model


@dataclass(frozen=True)
class Task:
    """One task folder, loaded and resolved."""

    name: str
    path: str
    """Names from the root's child down, joined by '/'; the root is ``""``."""
    folder: Path
    config: TaskConfig
    settings: EffectiveSettings
    priority: int = DEFAULT_PRIORITY
    instructions: str | None = None
    """Instructions after includes, before the injected JSON-output text."""
    instructions_file: Path | None = None
    system_prompt: str | None = None
    """Instructions + injected JSON-output instruction: what the model is sent."""
    children: tuple[Task, ...] = ()
    disabled_children: tuple[Task, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    """Resolved tool set (own > shared > inherited, after scoping)."""
    own_tools: tuple[ToolSpec, ...] = ()
    provider: ResolvedProvider | None = None
    """``None`` when nothing in the tree configures one (an error only if the task runs)."""
    hooks: Mapping[str, Path | HttpHook] = field(default_factory=dict)
    """``pre_run`` / ``post_run`` -> hook file (.py or .sh), else task.yaml's http hook."""
    content_hash: str = ""
    """sha256 over the task's own files + resolved tools + provider settings (cache keys)."""
    file_digests: Mapping[str, str] = field(default_factory=dict)
    """sha256 of each own file that ``content_hash`` covered, by relative path, from the
    same read (empty when the load made no hashes)."""
    source_file: Path | None = None
    """task.yaml or SKILL.md holding the config (for diagnostics)."""
    rel_dir: str = ""
    """Folder relative to the workflow root (``subtasks/10_fetch``), as in ``_env.task_dir``."""

    @property
    def kind(self) -> TaskKind:
        if self.children and self.instructions is not None:
            return "both"
        return "branch" if self.children else "leaf"

    @property
    def runs_agent(self) -> bool:
        return self.instructions is not None

    @property
    def execution_type(self) -> ExecutionType:
        return self.config.subtasks.execution_type if self.config.subtasks else "parallel"

    @property
    def on_error(self) -> OnError:
        return self.config.subtasks.on_error if self.config.subtasks else "fail"

    @property
    def on_max_iterations(self) -> OnMaxIterations:
        return self.config.subtasks.on_max_iterations if self.config.subtasks else "fail"

    def walk(self) -> Iterator[Task]:
        """This task and every enabled descendant, depth first, in sibling order."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class Workflow:
    """A loaded workflow: the root task plus workflow-wide resources."""

    root: Task
    root_dir: Path
    name: str
    shared_tools: tuple[ToolSpec, ...] = ()
    warnings: tuple[Any, ...] = ()
    """Diagnostics of severity warning found while loading."""

    @cached_property
    def declared_outputs(self) -> frozenset[str]:
        """Every output key some task (enabled or not) declares: the copy of an answer under
        a task's name never replaces one of these."""
        keys: set[str] = set()
        stack = [self.root]
        while stack:
            task = stack.pop()
            keys.update(task.config.output_keys)
            stack.extend([*task.children, *task.disabled_children])
        return frozenset(keys)

    def tasks(self) -> list[Task]:
        """Every enabled task, root first, depth first in sibling order."""
        return list(self.root.walk())

    def find(self, path: str) -> Task:
        """The task at ``path`` (``""`` = root); KeyError when absent."""
        for task in self.root.walk():
            if task.path == path:
                return task
        raise KeyError(path)
