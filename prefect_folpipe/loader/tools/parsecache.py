"""The static reading of a tools.md kept between processes (``folpipe validate``).

Reading a tools.md without running it (``import_tools=False``) parses its markdown and every
python block's source: most of a fresh ``folpipe validate`` of a big tree. What it finds is a
function of the file's bytes, its path and owning task, folpipe's own code, and whether the
modules its code imports can be found. So the result is stored under a key made of the first
three (``build``: folpipe's version, its source files' sizes and times, the Python version),
with the import lookups it made; a stored result is used only while each of those modules is
still found (or still missing) as it was. Everything else is read afresh each time.

Where: ``$FOLPIPE_PARSE_CACHE`` (a folder; ``0`` / ``off`` turns the cache off), else
``$XDG_CACHE_HOME/folpipe``, else ``~/.cache/folpipe``: one SQLite file, owner-only, never in
the workflow folder (a folder under review must not be able to answer for its own files).
Values are JSON checked to decode to exactly what the parse returned; a file whose result does
not survive that round trip is not stored. Any problem with the cache (unwritable, locked,
corrupt) turns it off for the process: validation never depends on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from ...errors import Diagnostic, Severity
from ...workflow.tree import ToolSpec
from ._static import module_found, recorded_lookups

ENV = "FOLPIPE_PARSE_CACHE"
OFF = frozenset({"0", "off", "false", "no"})
FILE = "parses.sqlite3"
FORMAT = 1
"""Bump when the stored JSON changes shape."""
KEEP_S = 30 * 86400.0
"""Entries not written again for this long are dropped."""
MAX_ROWS = 50_000

Parsed = tuple[list[ToolSpec], list[Diagnostic]]
Lookups = list[tuple[str, bool]]

_TOOL_FIELDS = tuple(f.name for f in fields(ToolSpec))
_DIAGNOSTIC_FIELDS = tuple(f.name for f in fields(Diagnostic))


def cache_folder() -> Path | None:
    """Where the cache lives, or ``None`` when it is turned off."""
    setting = os.environ.get(ENV)
    if setting is not None:
        if setting.strip().lower() in OFF or not setting.strip():
            return None
        return Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "folpipe"


class ParseCache:
    """One SQLite file of stored parses; writes are queued and committed by :meth:`flush`."""

    def __init__(self, folder: Path, build: str) -> None:
        self.folder = folder
        self.build = build
        self._db: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()  # one connection, any thread that loads
        self._pending: dict[str, str] = {}
        self._broken = False
        self._empty = False  # nothing stored when opened (a first validation): no lookups

    def get(self, key: str) -> str | None:
        with self._lock:
            db = self._connect()
            if db is None or self._empty:
                return None
            try:
                row = db.execute("SELECT value FROM parses WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error:
                self._close(broken=True)
                return None
            return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        with self._lock:
            if not self._broken:
                self._pending[key] = value

    def flush(self) -> None:
        """Write the queued entries in one transaction, drop expired ones, and close the file
        until the next load (no journal left beside it)."""
        with self._lock:
            if self._pending:
                self._write(self._pending)
            self._pending = {}
            self._close(broken=False)

    def _write(self, pending: dict[str, str]) -> None:
        db = self._connect()
        if db is None:
            return
        now = time.time()
        try:
            db.execute("BEGIN")
            try:
                db.executemany(
                    "INSERT OR REPLACE INTO parses (key, value, written) VALUES (?, ?, ?)",
                    [(key, value, now) for key, value in pending.items()],
                )
                db.execute("DELETE FROM parses WHERE written < ?", (now - KEEP_S,))
                (rows,) = db.execute("SELECT COUNT(*) FROM parses").fetchone()
                if rows > MAX_ROWS:  # the oldest go (a full sort only when over the cap)
                    db.execute(
                        "DELETE FROM parses WHERE key IN "
                        "(SELECT key FROM parses ORDER BY written LIMIT ?)",
                        (rows - MAX_ROWS,),
                    )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error:
            self._close(broken=True)

    def _connect(self) -> sqlite3.Connection | None:
        if self._pid != os.getpid():  # a forked child: the parent's connection is not its own
            self._db, self._pid, self._pending = None, os.getpid(), {}
        if self._db is not None or self._broken:
            return self._db
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = self.folder / FILE
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            os.close(descriptor)
            db = sqlite3.connect(path, timeout=2.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS parses "
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL, written REAL NOT NULL)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS parses_written ON parses (written)")
            self._empty = not db.execute("SELECT 1 FROM parses LIMIT 1").fetchone()
        except (OSError, sqlite3.Error):
            self._close(broken=True)
            return None
        self._db = db
        return db

    def _close(self, *, broken: bool) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None
        self._broken = self._broken or broken
        if broken:
            self._pending.clear()


_CACHE: dict[tuple[str | None, ...], ParseCache | None] = {}


def shared_cache() -> ParseCache | None:
    """The process's cache for the current setting (``None``: turned off)."""
    environ = os.environ
    marker = (environ.get(ENV), environ.get("XDG_CACHE_HOME"), environ.get("HOME"))
    if marker not in _CACHE:
        folder = cache_folder()
        _CACHE[marker] = ParseCache(folder, build_fingerprint()) if folder else None
    return _CACHE[marker]


def flush() -> None:
    """Commit what this process's parses queued and close the cache (after each load)."""
    for cache in _CACHE.values():
        if cache is not None:
            cache.flush()


_BUILD: list[str] = []


def build_fingerprint() -> str:
    """folpipe's version (its ``__init__.py``), the size and time of each of its source files,
    Python's version: a change to any of them (an upgrade, an edited checkout) starts a fresh
    set of keys."""
    if not _BUILD:
        package = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256(f"{FORMAT}|{sys.version}|".encode())
        digest.update((package / "__init__.py").read_bytes())
        for path in sorted(_sources(str(package))):
            stat = os.stat(path)
            digest.update(f"{path}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        _BUILD.append(digest.hexdigest())
    return _BUILD[0]


def _sources(folder: str) -> Iterator[str]:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                yield from _sources(entry.path)
            elif entry.name.endswith(".py"):
                yield entry.path


def cached_parse(data: bytes, file: str, owner: str, parse: Callable[[], Parsed]) -> Parsed:
    """``parse()``'s result for this file, from the cache when an entry for these bytes is
    there and its import lookups still come out the same; else parsed (its lookups
    recorded) and queued."""
    cache = shared_cache()
    if cache is None:
        return parse()
    digest = hashlib.sha256(f"{cache.build}\0{file}\0{owner}\0".encode())
    digest.update(data)
    key = digest.hexdigest()
    stored = cache.get(key)
    if stored is not None:
        hit = _decode(stored)
        if hit is not None and _still_found(hit[1]):
            return hit[0]
    with recorded_lookups() as made:
        result = parse()
    value = _encode(result, made)
    if value is not None:
        cache.put(key, value)
    return result


def _still_found(lookups: Lookups) -> bool:
    return all(module_found(module) == found for module, found in lookups)


def _encode(result: Parsed, lookups: Lookups) -> str | None:
    """JSON of the result, or ``None`` when it would not decode to an equal result (a tuple
    read back as a list, a number key as a string, ...)."""
    tools, diagnostics = result
    payload = {
        "tools": [[getattr(tool, name) for name in _TOOL_FIELDS] for tool in tools],
        "diagnostics": [[getattr(d, name) for name in _DIAGNOSTIC_FIELDS] for d in diagnostics],
        "lookups": lookups,
    }
    try:
        text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    decoded = json.loads(text)
    if decoded["tools"] != payload["tools"] or decoded["diagnostics"] != payload["diagnostics"]:
        return None
    return text


def _decode(text: str) -> tuple[Parsed, Lookups] | None:
    try:
        payload = json.loads(text)
        tools = [ToolSpec(**dict(zip(_TOOL_FIELDS, row, strict=True))) for row in payload["tools"]]
        diagnostics = [_diagnostic(row) for row in payload["diagnostics"]]
        lookups = [(str(module), bool(found)) for module, found in payload["lookups"]]
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    return (tools, diagnostics), lookups


def _diagnostic(row: list[Any]) -> Diagnostic:
    values = dict(zip(_DIAGNOSTIC_FIELDS, row, strict=True))
    values["severity"] = Severity(values["severity"])
    return Diagnostic(**values)


__all__ = ["ENV", "ParseCache", "cache_folder", "cached_parse", "flush", "shared_cache"]
