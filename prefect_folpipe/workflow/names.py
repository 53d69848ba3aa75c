"""Names derived from task paths and workflow names (artifact keys, checkpoint files,
deployment names): one spelling everywhere."""

from __future__ import annotations

import re

GENERIC_FLOW_NAME = "folpipe-run"
"""The flow of the generic deployment entrypoint ``prefect_folpipe.flows:run_workflow_folder``."""
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str, *, limit: int = 60, empty: str = "root") -> str:
    """Lowercase letters, digits and dashes, at most ``limit`` characters (``empty`` when
    nothing is left)."""
    return _NOT_SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-") or empty


RESTORED_SUFFIX = "(restored from checkpoints)"
"""Ends the name of the task run standing for children restored from checkpoints
(``<where>: <what> (restored from checkpoints)``, ``compile.executor``; ``deploy.status``
reads it back)."""
