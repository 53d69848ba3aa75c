"""Instructions: ``{% include "name" %}`` snippets and the injected JSON-output text.

Snippet ``name`` is ``shared/instructions/<name>.md``; snippets may include snippets. Unknown
names, malformed directives and cycles are diagnostics at the directive's line.

No JSON instruction is injected when the instructions already ask for JSON themselves, which
:func:`asks_for_json` decides: a fenced ```` ```json```` block, or the word "JSON" in the same
line and within 80 characters after a verb such as respond / reply / return / output / answer /
format / produce / emit / write (``Respond only with a JSON object``, ``Output format: JSON``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .._process.files import read_workflow_file
from ..errors import Diagnostic, suggest

INCLUDE = re.compile(r"\{%-?\s*include\s+([\"'])([^\"'\n]+)\1\s*-?%\}")
ANY_INCLUDE = re.compile(r"\{%-?\s*include\b[^\n]*?%\}|\{%-?\s*include\b")
_NAME = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*")
_JSON_FENCE = re.compile(r"```\s*json\b", re.IGNORECASE)
_JSON_REQUEST = re.compile(
    r"\b(?:respond|responds|response|reply|return|returns|output|answer|format|produce|emit|"
    r"write)\w*\b[^\n]{0,80}?\bjson\b",
    re.IGNORECASE,
)


def asks_for_json(text: str) -> bool:
    """Whether instructions already tell the model to answer in JSON (then nothing is added)."""
    return bool(_JSON_FENCE.search(text) or _JSON_REQUEST.search(text))


def output_instruction(output: list[str] | dict[str, str | None] | None) -> str | None:
    """The exact text injected for a declared output (None when none is declared)."""
    if not output:
        return None
    if isinstance(output, list):
        return f"Respond with a JSON code block containing these keys: {', '.join(output)}"
    lines = [f"- {key} ({kind or 'any'})" for key, kind in output.items()]
    return "Respond with a JSON code block with the following keys and types:\n" + "\n".join(lines)


def system_prompt(
    instructions: str | None, output: list[str] | dict[str, str | None] | None
) -> str | None:
    """Instructions plus the injected JSON-output instruction, when one is due."""
    if instructions is None:
        return None
    injected = output_instruction(output)
    if injected is None or asks_for_json(instructions):
        return instructions
    body = instructions.rstrip()
    return f"{body}\n\n{injected}" if body else injected


@dataclass
class Snippets:
    """Reads ``shared/instructions/*.md`` once per load and expands includes."""

    root: Path
    cache: dict[str, str | None] = field(default_factory=dict)
    used: dict[str, Path] = field(default_factory=dict)
    """Every snippet read so far, by name (for content hashes)."""
    blobs: dict[str, bytes] = field(default_factory=dict)
    """The bytes of each snippet read, by path (content hashes read no file twice)."""

    @property
    def folder(self) -> Path:
        return self.root / "shared" / "instructions"

    def expand(
        self, text: str, file: str, task: str, first_line: int = 1
    ) -> tuple[str, list[Path], list[Diagnostic]]:
        """``text`` with includes replaced; the snippet files used; problems found."""
        if "{%" not in text:
            return text, [], []
        expansion = _Expansion(self, task)
        return expansion.run(text, file, first_line, ()), expansion.files, expansion.diagnostics

    def read(self, name: str) -> str | None:
        if name not in self.cache:
            path = self.folder / f"{name}.md"
            try:
                data = self.blobs.get(str(path))  # read by this load's vetting already
                if data is None:
                    data = read_workflow_file(path)
                self.cache[name] = data.decode("utf-8-sig")
                self.used[name] = path
                self.blobs[str(path)] = data
            except (OSError, UnicodeDecodeError):
                self.cache[name] = None
        return self.cache[name]

    def available(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(
            p.relative_to(self.folder).with_suffix("").as_posix()
            for p in self.folder.rglob("*.md")
            if p.is_file()
        )


@dataclass
class _Expansion:
    snippets: Snippets
    task: str
    files: list[Path] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def run(self, text: str, file: str, first_line: int, stack: tuple[str, ...]) -> str:
        self._check_malformed(text, file, first_line)

        def replace(match: re.Match[str]) -> str:
            line = first_line + text.count("\n", 0, match.start())
            return self._include(match.group(2).strip(), file, line, stack) or match.group(0)

        return INCLUDE.sub(replace, text)

    def _include(self, name: str, file: str, line: int, stack: tuple[str, ...]) -> str | None:
        if not _NAME.fullmatch(name) or ".." in name.split("/"):
            self._error(
                "FP122",
                f"invalid snippet name {name!r}",
                file,
                line,
                "a snippet name is a file name under shared/instructions/, without .md",
            )
            return None
        if name in stack:
            cycle = " -> ".join((*stack, name))
            self._error(
                "FP121",
                f"include cycle: {cycle}",
                file,
                line,
                "a snippet must not include itself, directly or indirectly",
            )
            return None
        body = self.snippets.read(name)
        if body is None:
            self._unknown(name, file, line)
            return None
        self.files.append(self.snippets.used[name])
        rel = f"shared/instructions/{name}.md"
        return self.run(body.rstrip("\n"), rel, 1, (*stack, name))

    def _unknown(self, name: str, file: str, line: int) -> None:

        available = self.snippets.available()
        close = suggest(name, available)
        hint = (
            f"did you mean {close!r}?"
            if close
            else f"create shared/instructions/{name}.md"
            + (f" (snippets: {', '.join(available)})" if available else "")
        )
        self._error("FP120", f"unknown include {name!r}", file, line, hint)

    def _check_malformed(self, text: str, file: str, first_line: int) -> None:
        for match in ANY_INCLUDE.finditer(text):
            if not INCLUDE.fullmatch(match.group(0)):
                line = first_line + text.count("\n", 0, match.start())
                self._error(
                    "FP122",
                    f"malformed include directive {match.group(0)!r}",
                    file,
                    line,
                    'write {% include "name" %} with the name in quotes',
                )

    def _error(self, code: str, message: str, file: str, line: int, hint: str) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, line, self.task, hint))
