"""Workflow folder -> :class:`~prefect_folpipe.workflow.Workflow` (no Prefect here).

``load_workflow(path)`` walks the folder, parses every task.yaml with line
numbers, applies the config cascade, resolves providers, expands instruction
includes and the JSON-output instruction, discovers and resolves tools and
hooks, and hashes each task's content. :func:`load` never raises for author mistakes: it
returns what it could build with every diagnostic found while reading. The rules that look at
the whole tree, and ``load_workflow``, are in ``validate/``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._process.heap import collections_held
from ..errors import Diagnostic, Severity
from ..workflow.tree import Task, ToolSpec, Workflow
from . import _tools
from ._cascade import Cascade
from ._discover import Discovery, RawTask
from ._hash import FolderDigest, file_digests, folder_digest, task_hash
from ._instructions import Snippets, system_prompt
from ._providers import ProviderTable, check_provider_blocks, check_task_provider
from ._yaml import Loc, SourceMap, parse_yaml
from .tools import parsecache

__all__ = [
    "LoadResult",
    "Loc",
    "SourceMap",
    "file_digests",
    "has_code_tools",
    "load",
    "load_vetted",
    "parse_yaml",
]


@dataclass
class LoadResult:
    """A loaded (maybe broken) workflow, the diagnostics found so far and source maps."""

    root_dir: Path
    workflow: Workflow | None
    diagnostics: list[Diagnostic]
    sources: dict[int, SourceMap] = field(default_factory=dict)

    def source(self, task: Task) -> SourceMap:
        """Line map of the task's task.yaml / SKILL.md (empty when it has none)."""
        return self.sources.get(id(task)) or SourceMap(task.rel_dir or ".")

    def all_tasks(self) -> Iterator[Task]:
        """Every task, disabled ones and their subtrees included, root first."""
        if self.workflow is None:
            return
        stack = [self.workflow.root]
        while stack:
            task = stack.pop()
            yield task
            stack.extend(reversed([*task.children, *task.disabled_children]))


def load(path: str | Path, *, import_tools: bool = True, content_hashes: bool = True) -> LoadResult:
    """Read a workflow folder into a tree, collecting every loading diagnostic; never raises
    for author mistakes.

    ``import_tools=False`` never executes the workflow's code: tools.md python blocks and
    ``tools/*.py`` are read from their source (``loader.toolstatic``). ``True`` imports them,
    as a run does, so the tools' schemas are those of the real functions (a run uses
    :func:`load_vetted`: nothing is imported from a folder with an error).
    ``content_hashes=False`` leaves every task's ``content_hash`` empty (``folpipe
    validate``: no rule uses it, and hashing reads every file of every task folder, data
    files included); the diagnostics are the same."""
    try:
        with collections_held():  # no GC pass spent on what it builds
            root = Path(path).expanduser().absolute()
            discovery = Discovery(root)
            return _load(root, discovery, discovery.load_root(), import_tools, content_hashes)
    finally:
        if not import_tools:
            parsecache.flush()  # what this load stored, and the cache closed


def load_vetted(
    path: str | Path, vet: Callable[[LoadResult], list[Diagnostic]]
) -> tuple[LoadResult, list[Diagnostic]]:
    """The loading of a run: the folder read without running any of its code, vetted (``vet``
    gives the diagnostics of the validation rules), and only when no diagnostic is an error,
    its python tools imported (a second build over the same discovered folder and bytes).
    The result and every diagnostic (loading's, then the rules')."""
    root = Path(path).expanduser().absolute()
    try:
        with collections_held():
            discovery = Discovery(root)
            raw_root = discovery.load_root()
            static = _load(root, discovery, raw_root, False, True)
        parsecache.flush()
        diagnostics = [*static.diagnostics, *vet(static)]
        if (
            static.workflow is None
            or any(d.severity == Severity.ERROR for d in diagnostics)
            or not has_code_tools(static.workflow)  # nothing to import: the same tree
        ):
            return static, diagnostics
        with collections_held():
            imported = _load(root, discovery, raw_root, True, True)
        rules = diagnostics[len(static.diagnostics) :]
        return imported, [*imported.diagnostics, *rules]
    finally:
        parsecache.flush()


def has_code_tools(workflow: Workflow) -> bool:
    """Whether any task (disabled ones included) or ``shared/tools.md`` has a python tool:
    the only tools whose loading imports the workflow's code."""
    if any(tool.kind == "python" for tool in workflow.shared_tools):
        return True
    stack = [workflow.root]
    while stack:
        task = stack.pop()
        if any(tool.kind == "python" for tool in (*task.own_tools, *task.tools)):
            return True
        stack.extend((*task.children, *task.disabled_children))
    return False


def _load(
    root: Path,
    discovery: Discovery,
    raw_root: RawTask | None,
    import_tools: bool,
    content_hashes: bool,
) -> LoadResult:
    if raw_root is None:
        return LoadResult(root, None, discovery.diagnostics)
    builder = _Builder(
        root, raw_root, discovery.blobs, import_tools=import_tools, content_hashes=content_hashes
    )
    builder.folder_digests = discovery.folder_digests
    builder.known = discovery.own_parts
    builder.task_hashes = discovery.task_hashes
    builder.listings = discovery.listings
    if discovery.root_cascade is None:
        discovery.root_cascade = Cascade()
    task = builder.build(raw_root, discovery.root_cascade, ())
    workflow = Workflow(root=task, root_dir=root, name=task.name, shared_tools=builder.shared_tools)
    diagnostics = _dedupe([*discovery.diagnostics, *builder.diagnostics])
    return LoadResult(root, workflow, diagnostics, builder.sources)


@dataclass(frozen=True)
class _OwnPart:
    """A task's build that does not depend on its tools (the same when they are imported)."""

    cascade: Cascade
    provider: Any
    instructions: str | None
    snippet_files: list[Path]
    settings: Any
    system_prompt: str | None
    diagnostics: list[Diagnostic]


class _Builder:
    """Resolves RawTasks top-down into frozen Tasks (children first built, then the parent)."""

    def __init__(
        self,
        root: Path,
        raw_root: RawTask,
        blobs: dict[str, bytes],
        *,
        import_tools: bool,
        content_hashes: bool,
    ) -> None:
        self.root = root
        self.import_tools = import_tools
        self.content_hashes = content_hashes
        self.blobs = blobs
        self.folder_digests: dict[tuple[str, str], FolderDigest] | None = None
        self.listings: dict[str, list[os.DirEntry[str]]] = {}
        """Task folders' entries as the load listed them (``Discovery.listings``)."""
        self.task_hashes: dict[tuple[int, tuple[tuple[str, str, str], ...]], str] = {}
        """Content hashes of the builds of one load (``Discovery.task_hashes``)."""
        self.known: dict[int, _OwnPart] = {}
        """Each raw task's :class:`_OwnPart` by ``id``, shared by the builds of one load."""
        self.diagnostics: list[Diagnostic] = []
        self.sources: dict[int, SourceMap] = {}
        self.snippets = Snippets(root, blobs=blobs)
        self.providers = ProviderTable()
        shared, problems = _tools.shared_tools(root, import_tools=import_tools, blobs=blobs)
        self.shared_tools: tuple[ToolSpec, ...] = shared
        self._add(problems, "")
        self.raw_root = raw_root

    def build(self, raw: RawTask, parent: Cascade, lineage: _tools.Lineage) -> Task:
        own_part = self.known.get(id(raw))
        if own_part is None:
            own_part = self.known[id(raw)] = self._own_part(raw, parent)
        cascade, provider = own_part.cascade, own_part.provider
        self.diagnostics += own_part.diagnostics
        own, problems = _tools.own_tools(
            raw.folder,
            raw.entries,
            raw.path,
            import_tools=self.import_tools,
            blobs=self.blobs,
            files=raw.files,
        )
        self._add(problems, raw.path)
        lineage = (*lineage, (raw.path, raw.config, own))
        tools, problems = _tools.resolved_tools(lineage, self.shared_tools)
        self._add(
            [_tools.locate(problem, raw.config, raw.source) for problem in problems], raw.path
        )
        hash_, digests = "", {}
        if self.content_hashes:
            listing = self.listings.get(str(raw.folder))
            key = (id(raw), tuple(sorted((t.name, t.owner, t.content_hash) for t in tools)))
            hash_ = self.task_hashes.get(key) or task_hash(
                raw.path,
                raw.folder,
                raw.entries,
                own_part.snippet_files,
                tools,
                provider,
                self.blobs,
                self.folder_digests,
                listing,
            )
            self.task_hashes[key] = hash_
            known = folder_digest(raw.path, raw.folder, self.blobs, self.folder_digests, listing)
            digests = known[1]
        task = Task(
            name=raw.name,
            path=raw.path,
            folder=raw.folder,
            config=raw.config,
            settings=own_part.settings,
            priority=raw.priority,
            instructions=own_part.instructions,
            instructions_file=raw.instructions_file,
            system_prompt=own_part.system_prompt,
            children=tuple(self.build(c, cascade, lineage) for c in raw.children),
            disabled_children=tuple(self.build(c, cascade, lineage) for c in raw.disabled),
            tools=tools,
            own_tools=own,
            provider=provider,
            hooks=_tools.hooks(raw.folder, raw.entries, raw.config),
            content_hash=hash_,
            file_digests=digests,
            source_file=raw.source_file,
            rel_dir=raw.rel_dir,
        )
        self.sources[id(task)] = raw.source if raw.source_file else SourceMap(raw.rel_dir or ".")
        return task

    def _own_part(self, raw: RawTask, parent: Cascade) -> _OwnPart:
        """What a task's build takes from its own folder and the cascade, not from the tools."""
        cascade = parent.child(raw.config)
        diagnostics = check_provider_blocks(raw.config, cascade.providers, raw.source, raw.path)
        provider = self.providers.resolve(cascade.agent, cascade.providers)
        diagnostics += check_task_provider(
            raw.config, provider, cascade.providers, raw.source, raw.path
        )
        instructions, snippet_files = None, []
        if raw.instructions is not None and raw.instructions_file is not None:
            file = raw.instructions_file.relative_to(self.root).as_posix()
            instructions, snippet_files, problems = self.snippets.expand(
                raw.instructions, file, raw.path, raw.instructions_line
            )
            diagnostics += problems
        loop = raw.config.subtasks is not None and raw.config.subtasks.execution_type == "loop"
        return _OwnPart(
            cascade=cascade,
            provider=provider,
            instructions=instructions,
            snippet_files=snippet_files,
            settings=cascade.effective_settings(loop=loop),
            system_prompt=system_prompt(instructions, raw.config.output),
            diagnostics=diagnostics,
        )

    def _add(self, problems: list[Diagnostic], path: str) -> None:
        """Diagnostics from the tools package, with files made relative to the root."""
        for problem in problems:
            self.diagnostics.append(
                replace(
                    problem,
                    file=_relative(problem.file, self.root),
                    task=path if problem.task in (None, "<shared>") and path else problem.task,
                )
            )


def _relative(file: str | None, root: Path) -> str | None:
    if not file:
        return file
    candidate = Path(file)
    if not candidate.is_absolute():
        return file
    try:
        return candidate.relative_to(root).as_posix()
    except ValueError:
        return file


def _dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The same problem reached from several tasks (a shared snippet, say) is reported once."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.message, diagnostic.file, diagnostic.line)
        if key not in seen:
            seen.add(key)
            out.append(diagnostic)
    return out
