"""Reading one task folder's files: task.yaml or SKILL.md front-matter (``skills``),
instructions, the name.

Every file is read once; its bytes are kept (``blobs``) so content hashes need not read it
again. Problems become diagnostics (FP102, FP105, FP107, FP108, FP116), never exceptions.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._process.files import NotAFile, TooLarge, read_workflow_file
from ..errors import Diagnostic, Severity
from ..workflow.config import TaskConfig
from ..workflow.names import has_controls
from ._config import parse_config
from ._inputs import input_problems, with_input_comments
from ._yaml import SourceMap, YamlProblem, parse_yaml
from .skills import skill_config

TASK_YAML = "task.yaml"
INSTRUCTIONS = "instructions.md"
SKILL = "SKILL.md"
PREFIX = re.compile(r"^(\d+)_(?=.)")

MAX_PARSED = 8192
ParseKey = tuple[str, str, str, int, str | None]
Parsed = tuple[TaskConfig, SourceMap, tuple[Diagnostic, ...]]
_PARSED: dict[ParseKey, Parsed] = {}
"""(text, file, task label, line offset, skill) -> the parsed config, its source map and the
diagnostics parsing reported."""

Instructions = tuple[str, Path, int]
"""The instructions' text, their file and the line their first line is on."""


class FolderFiles:
    """Reads task folders' files into configs and instructions, reporting into ``diagnostics``."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        self.blobs: dict[str, bytes] = {}
        """Bytes of every file read, by path (``str``), for the content hashes."""

    def error(
        self,
        code: str,
        message: str,
        file: str | None,
        line: int | None = None,
        task: str | None = None,
        hint: str | None = None,
        severity: Severity = Severity.ERROR,
    ) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, line, task, hint, severity))

    def read_task(
        self, folder: Path, entries: frozenset[str], label: str
    ) -> tuple[TaskConfig, SourceMap, Path | None, Instructions | None]:
        rel = f"{label}/" if label else ""
        if SKILL in entries and not entries & {TASK_YAML, INSTRUCTIONS}:
            return self._read_skill(folder / SKILL, f"{rel}{SKILL}", label)
        if SKILL in entries:
            self.error(
                "FP107",
                "SKILL.md next to task.yaml / instructions.md is ignored",
                f"{rel}{SKILL}",
                1,
                label,
                "keep either SKILL.md (front-matter + body) or task.yaml + instructions.md",
                Severity.WARNING,
            )
        source = SourceMap(f"{rel}{TASK_YAML}")
        config, source_file = TaskConfig(), None
        if TASK_YAML in entries:
            source_file = folder / TASK_YAML
            text = self.read_text(source_file, source.file, label)
            if text is not None:
                config, source = self._parse(text, source.file, label)
        instructions = None
        if INSTRUCTIONS in entries:
            body = self.read_text(folder / INSTRUCTIONS, f"{rel}{INSTRUCTIONS}", label)
            instructions = (body, folder / INSTRUCTIONS, 1) if body is not None else None
        return config, source, source_file, instructions

    def _read_skill(
        self, file: Path, rel: str, label: str
    ) -> tuple[TaskConfig, SourceMap, Path | None, Instructions | None]:
        text = self.read_text(file, rel, label)
        if text is None:
            return TaskConfig(), SourceMap(rel), file, None
        lines = text.splitlines(keepends=True)
        if not lines or lines[0].strip() != "---":
            return TaskConfig(), SourceMap(rel), file, (text, file, 1)
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            self.error(
                "FP107",
                "SKILL.md front-matter is not closed by a `---` line",
                rel,
                1,
                label,
                "end the YAML front-matter with a line holding only ---",
            )
            return TaskConfig(), SourceMap(rel), file, (text, file, 1)
        front = "".join(lines[1:end])
        config, source = self._parse(front, rel, label, line_offset=1, skill=file.parent.name)
        body = "".join(lines[end + 1 :])
        return config, source, file, (body, file, end + 2) if body.strip() else None

    def read_text(self, file: Path, rel: str, label: str) -> str | None:
        try:
            data = read_workflow_file(file)
            self.blobs[str(file)] = data
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            self.error(
                "FP108",
                f"file is not UTF-8 text ({exc.reason} at byte {exc.start})",
                rel,
                None,
                label,
                "save the file as UTF-8",
            )
        except OSError as exc:
            if isinstance(exc, IsADirectoryError):
                hint = "it must be a file, not a folder"
            elif isinstance(exc, NotAFile):
                hint = "replace it with a regular file"
            elif isinstance(exc, TooLarge):
                hint = "keep big inputs in data files the task's tools read (input/)"
            else:
                hint = "check the file's permissions"
            self.error("FP108", f"cannot read file: {exc.strerror or exc}", rel, None, label, hint)
        return None

    def _parse(
        self, text: str, rel: str, label: str, *, line_offset: int = 0, skill: str | None = None
    ) -> tuple[TaskConfig, SourceMap]:
        """task.yaml text (or a SKILL.md front-matter, ``skill`` = its folder's name).

        The result is a function of the arguments alone, so it is kept per process
        (:data:`_PARSED`): a second load of an unchanged folder (``folpipe serve``, a run after
        ``validate``) parses no YAML. Configs are frozen and nothing writes a source map."""
        key = (text, rel, label, line_offset, skill)
        hit = _PARSED.get(key)
        if hit is None:
            before = len(self.diagnostics)
            config, source = self._parse_text(text, rel, label, line_offset, skill)
            hit = (config, source, tuple(self.diagnostics[before:]))
            if len(_PARSED) >= MAX_PARSED:
                _PARSED.clear()
            _PARSED[key] = hit
        else:
            self.diagnostics += hit[2]
        return hit[0], hit[1]

    def _parse_text(
        self, text: str, rel: str, label: str, line_offset: int, skill: str | None
    ) -> tuple[TaskConfig, SourceMap]:
        data, source, problems = parse_yaml(text, rel, line_offset=line_offset)
        for problem in problems:
            self._yaml_problem(problem, rel, label)
        if any(p.kind == "syntax" for p in problems):
            return TaskConfig(), source
        if skill is not None and isinstance(data, dict):
            data, warnings = skill_config(data, source, skill, label)
            self.diagnostics += warnings
        config, _, diagnostics = parse_config(data, source, label)
        self.diagnostics += diagnostics
        self.diagnostics += input_problems(config, source, label)
        return with_input_comments(config, text, source, line_offset), source

    def _yaml_problem(self, problem: YamlProblem, rel: str, label: str) -> None:
        if problem.kind == "duplicate":
            self.error(
                "FP105", problem.message, rel, problem.line, label, "remove one of the two keys"
            )
        else:
            self.error(
                "FP102",
                problem.message,
                rel,
                problem.line,
                label,
                "check indentation, colons and quotes around this line",
            )

    def name(self, config: TaskConfig, folder: Path, source: SourceMap, label: str) -> str:
        fallback = PREFIX.sub("", folder.name) or folder.name
        name = config.name
        if name is None:
            return fallback
        if not name.strip() or "/" in name or name.startswith(".") or has_controls(name):
            self.error(
                "FP116",
                f"invalid task name {name!r}",  # repr escapes control characters
                source.file,
                source.line(("name",)),
                label,
                "a name is not empty, has no '/' and no control characters, and does not "
                "start with '.'",
            )
            return fallback
        return name
