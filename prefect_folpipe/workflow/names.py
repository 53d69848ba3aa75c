"""Names derived from task paths and workflow names (artifact keys, checkpoint files,
deployment names): one spelling everywhere."""

from __future__ import annotations

import re

GENERIC_FLOW_NAME = "folpipe-run"
"""The flow of the generic deployment entrypoint ``prefect_folpipe.flows:run_workflow_folder``."""
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters (C0, DEL, C1) and bidirectional overrides: in a name printed to a
terminal they move the cursor, clear the screen, set the window title or reorder what is
shown."""
_CONTROLS_BUT_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
""":data:`_CONTROLS` without tabs and line breaks (in text laid out over lines)."""


def has_controls(text: str) -> bool:
    """Whether ``text`` holds a control character or a bidirectional override."""
    return _CONTROLS.search(text) is not None


def escape_controls(text: str, *, keep_layout: bool = False) -> str:
    """``text`` with each control character written as an escape (``\\x1b``): safe to
    print. ``keep_layout``: tabs and line breaks stay as they are."""
    pattern = _CONTROLS_BUT_LAYOUT if keep_layout else _CONTROLS
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def slug(text: str, *, limit: int = 60, empty: str = "root") -> str:
    """Lowercase letters, digits and dashes, at most ``limit`` characters (``empty`` when
    nothing is left)."""
    return _NOT_SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-") or empty


RESTORED_SUFFIX = "(restored from checkpoints)"
"""Ends the name of the task run standing for children restored from checkpoints
(``<where>: <what> (restored from checkpoints)``, ``compile.executor``; ``deploy.status``
reads it back)."""


def pass_label(label: str, phase: str) -> str:
    """The task-run name of a pass: ``path[i]``, plus `` (first pass)`` / `` (final pass)``."""
    return label if phase == "single" else f"{label} ({phase} pass)"


RESTORED_TAG = "folpipe-restored:"
"""Tags a restored task run with each subtree it stands for: ``folpipe-restored:<path>``
(``folpipe-restored:/`` for the whole tree); ``folpipe status`` reads them."""


def restored_tag(path: str) -> str:
    return RESTORED_TAG + (path or "/")


def restored_paths(tags: list[str] | tuple[str, ...]) -> list[str] | None:
    """The task paths a restored task run stands for (``""``: the whole tree), each with
    everything below it, from its tags; ``None`` when the run is not a restore."""
    paths = [tag[len(RESTORED_TAG) :] for tag in tags if tag.startswith(RESTORED_TAG)]
    if not paths:
        return None
    return ["" if path == "/" else path for path in paths]
