"""Files written whole: a temporary file beside the target, then a rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_whole(target: Path, content: bytes) -> None:
    """Write ``content`` to ``target`` (whose folder exists) through an owner-only temporary
    file and a rename: a failed or killed write leaves the old file or none, never an empty or
    partial one. The file is 0600 (``mkstemp`` creates it so, whatever the umask)."""
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
