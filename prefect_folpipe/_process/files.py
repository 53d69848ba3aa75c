"""Files read only when they are files, and written whole: a temporary file beside the
target, then a rename."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


class NotAFile(OSError):
    """A path that names a FIFO, a socket or a device where a file was expected."""


class TooLarge(OSError):
    """A file larger than what may be read of it (a sparse file of gigabytes, say)."""


def read_regular(
    path: str | os.PathLike[str], limit: int = -1, *, max_size: int | None = None
) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed; at most ``limit`` of
    them when it is not negative; :class:`TooLarge`, unread, when its size is over
    ``max_size``). Anything else is refused without blocking: a FIFO in a workflow folder
    would hang a plain ``open`` until something writes to it. A folder raises
    ``IsADirectoryError``, the rest :class:`NotAFile` (all ``OSError``)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(descriptor, "rb", closefd=True) as handle:
        size = _refuse_unless_regular(os.fstat(descriptor), path, max_size)
        if limit < 0:
            return handle.read()
        # a read of ``limit`` bytes allocates ``limit`` bytes first: ask for what the file holds
        first = handle.read(min(limit, size + 1))
        if len(first) <= size or len(first) >= limit:
            return first
        return first + handle.read(limit - len(first))  # it grew while it was read


def check_regular(path: str | os.PathLike[str], max_size: int | None = None) -> None:
    """Raise as :func:`read_regular` would for ``path``, from a stat, reading nothing (for a
    file something else opens: a module Python imports)."""
    _refuse_unless_regular(os.stat(path), path, max_size)


def _refuse_unless_regular(
    info: os.stat_result, path: str | os.PathLike[str], max_size: int | None
) -> int:
    """The file's size, or the ``OSError`` that refuses it."""
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise NotAFile(errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(path))
    if max_size is not None and info.st_size > max_size:
        raise TooLarge(errno.EFBIG, f"larger than {max_size:,} bytes", str(path))
    return info.st_size


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


def read_bounded(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """:func:`read_regular`, refused (:class:`TooLarge`) when the file holds more than
    ``max_bytes``: nothing larger is read into memory."""
    data = read_regular(path, max_bytes + 1, max_size=max_bytes)
    if len(data) > max_bytes:  # it grew since its size was read
        raise TooLarge(errno.EFBIG, f"larger than {max_bytes:,} bytes", str(path))
    return data


MAX_WORKFLOW_FILE = 8 * 1024 * 1024
"""The largest file of a workflow folder the loader reads whole: a task.yaml, an instructions
file, a snippet, a tools.md, a tool module, a hook (data files are hashed, not loaded: see
``loader._hash``)."""


MAX_DATA_FILE = 256 * 1024 * 1024
"""The largest answers file read whole: a scripted provider's replies, a replay cassette."""


def read_workflow_file(path: str | os.PathLike[str]) -> bytes:
    """A workflow folder's file, at most :data:`MAX_WORKFLOW_FILE` bytes (``OSError``)."""
    return read_bounded(path, MAX_WORKFLOW_FILE)
