"""Values a task.yaml hands to the context (`context:`, `default_output:`) must be plain JSON:
a YAML date, ``!!binary``, ``!!set`` or ``.nan`` would reach the checkpoints and ``--json``
as a Python object (FP104)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..loader import LoadResult
from ..workflow.jsondata import NotPlainJSON, check_plain
from ._common import at

HINT = "use strings, finite numbers, booleans, null, lists and mappings (quote dates: '2024-01-01')"


def check_json_values(result: LoadResult) -> Iterator[Diagnostic]:
    """FP104 for a `context:` or `default_output:` value that is not plain JSON."""
    for task in result.all_tasks():
        for key in ("context", "default_output"):
            value = getattr(task.config, key)
            if not value:
                continue
            try:
                check_plain(value, key)
            except NotPlainJSON as exc:
                yield at(result, task, "FP104", f"{exc}", (key,), HINT)
