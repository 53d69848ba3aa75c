"""One tools.md section on its way to a ToolSpec: where its problems go, how it becomes a spec
(shared by ``loader.toolsmd`` and ``loader.toolpython``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...workflow.tree import ToolSpec
from . import _markdown as markdown
from ._defs import Diagnostics, content_hash, diagnostic


@dataclass
class Source:
    """One parsed tools.md section on its way to a ToolSpec, and where its problems go.

    ``import_tools``: whether python code blocks may be executed (else they are only read)."""

    section: markdown.Section
    parsed: markdown.ParsedSection
    file: Path
    owner: str
    diagnostics: Diagnostics
    import_tools: bool = True

    def report(
        self,
        code: str,
        message: str,
        line: int | None = None,
        hint: str | None = None,
        *,
        warning: bool = False,
    ) -> None:
        """Add a diagnostic at ``line`` (default: the section's heading)."""
        at = self.section.line if line is None else line
        self.diagnostics.append(
            diagnostic(code, message, self.file, at, self.owner, hint, warning=warning)
        )


def spec_of(
    source: Source,
    metadata: dict[str, Any],
    *,
    parameters: Mapping[str, Any],
    description: str | None = None,
    code: str | None = None,
    function_name: str | None = None,
) -> ToolSpec:
    """The ToolSpec of a section; ``description`` defaults to the section's prose."""
    kind = metadata["type"]
    name = source.section.name
    description = source.parsed.description if description is None else description
    block = source.parsed.code
    return ToolSpec(
        name=name,
        kind=kind,
        description=description,
        parameters=parameters,
        source_file=str(source.file.absolute()),
        line=source.section.line,
        code=code,
        code_line=block.line if block is not None and code is not None else None,
        function_name=function_name,
        metadata=metadata,
        scope=metadata.get("scope", "shared"),
        owner=source.owner,
        content_hash=_hash_of(source, kind, description, parameters, code, metadata),
    )


def _hash_of(
    source: Source,
    kind: str,
    description: str,
    parameters: Mapping[str, Any],
    code: str | None,
    metadata: dict[str, Any],
) -> str:
    """The tool's content hash. A python tool's is its section's text (the code included):
    the same whether the code was imported or only read (``folpipe plan`` reads it, the run
    imports it, and both must key the same checkpoints)."""
    name = source.section.name
    if kind == "python":
        return content_hash(kind=kind, name=name, section=[t for _, t in source.section.body])
    return content_hash(
        kind=kind,
        name=name,
        description=description,
        parameters=parameters,
        code=code,
        metadata=metadata,
    )
