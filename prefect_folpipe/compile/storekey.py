"""The key that authenticates what a run keeps in its result store, and the signing itself.

Every journal entry, stored approval answer and checkpoint, and every run record and
checkpoint manifest, is written with an HMAC-SHA256 tag over what it says *and* where it is
stored (its store key names the request fingerprint, the task's checkpoint key, or the hash
of the rendered question; a run record's file name; a manifest's pass), so an entry edited,
planted, or copied under another key fails the check and is never used (FP540, a miss). The
key is never in the store:

1. ``FOLPIPE_STORE_KEY``: the key itself, for stores shared between machines (every worker
   of a deployment, and every person resuming its runs, needs the same value);
2. ``FOLPIPE_STORE_KEY_SECRET``: the name of a Prefect ``Secret`` block holding it;
3. otherwise a per-user key, made on first use (64 random hex digits, mode 0600) in the
   user's config folder: ``$XDG_CONFIG_HOME/folpipe/store.key`` (``~/.config`` by default),
   ``~/Library/Application Support/folpipe/store.key`` on macOS, ``%APPDATA%`` on Windows.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._process.files import read_regular
from .._process.stored import DamagedEntry, load_stored
from ..errors import ConfigError

KEY_ENV = "FOLPIPE_STORE_KEY"
SECRET_ENV = "FOLPIPE_STORE_KEY_SECRET"
MAC_FIELD = "folpipe_mac"
"""The field of a stored JSON object that holds its tag."""
MAC_PREFIX = "hmac-sha256:v1:"


class StoreKeyError(ConfigError):
    """The store key cannot be read or made (the run does not start)."""

    code = "FP542"


class ForgedEntry(ValueError):
    """A stored entry whose tag is missing or does not match: it is never used."""

    code = "FP540"


def user_key_file(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """Where the per-user store key lives (outside any workflow folder)."""
    env = os.environ if environ is None else environ
    platform = platform or sys.platform
    if platform.startswith("win") and env.get("APPDATA"):
        base = Path(env["APPDATA"])
    elif platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "folpipe" / "store.key"


def store_key() -> bytes:
    """The key of this process's stores (``FOLPIPE_STORE_KEY``, a Secret block, or the
    per-user key file); raises ``StoreKeyError`` (FP542) when it cannot be had."""
    given = os.environ.get(KEY_ENV)
    if given:
        return given.encode("utf-8")
    block = os.environ.get(SECRET_ENV)
    if block:
        return _secret_key(block)
    env = os.environ
    return _file_key(_key_path(env.get("XDG_CONFIG_HOME"), env.get("HOME"), env.get("APPDATA")))


@functools.lru_cache(maxsize=8)
def _key_path(*where: str | None) -> str:
    """:func:`user_key_file` for the environment values it depends on (``where``): worked out
    once, not at every entry signed or checked."""
    return str(user_key_file())


def describe_key() -> str:
    """Where the key comes from, in words (never the key itself)."""
    if os.environ.get(KEY_ENV):
        return f"the environment variable {KEY_ENV}"
    if os.environ.get(SECRET_ENV):
        return f"the Prefect Secret block {os.environ[SECRET_ENV]!r}"
    return f"the per-user key {user_key_file()}"


def secret_block_text(name: str) -> str:
    """The string stored in the Prefect Secret block ``name`` (raises if missing / not text)."""
    from prefect.blocks.system import Secret

    value = Secret.load(name, _sync=True).get()  # type: ignore[call-arg]
    if not isinstance(value, str):
        raise TypeError(f"Secret block {name!r} holds a {type(value).__name__}, not a string")
    return value


@functools.lru_cache(maxsize=8)
def _secret_key(name: str) -> bytes:
    try:
        value = secret_block_text(name)
    except Exception as exc:
        raise StoreKeyError(
            f"the store key cannot be read from the Prefect Secret block {name!r} "
            f"({SECRET_ENV}): {type(exc).__name__}: {exc}",
            hint=f"create the block (`prefect block create secret`), or unset {SECRET_ENV}",
        ) from None
    if not value:
        raise StoreKeyError(f"the Prefect Secret block {name!r} ({SECRET_ENV}) is empty")
    return value.encode("utf-8")


@functools.lru_cache(maxsize=8)
def _file_key(path: str) -> bytes:
    file = Path(path)
    try:
        with contextlib.suppress(FileNotFoundError):
            return _read_key(file)
        _create_key(file)
        return _read_key(file)
    except OSError as exc:
        raise StoreKeyError(
            f"the per-user store key {file} cannot be read or made: {exc.strerror or exc}",
            hint=f"make its folder writable, or set {KEY_ENV} (or {SECRET_ENV})",
        ) from None


def _read_key(file: Path) -> bytes:
    data = read_regular(file).strip()
    if not data:
        raise StoreKeyError(
            f"the per-user store key {file} is empty",
            hint="delete it: a new one is made (entries signed with the old one are re-run)",
        )
    return data


def _create_key(file: Path) -> None:
    """Write a new key so that no reader ever sees a partial one (a private temporary file,
    then a hard link that fails if another process made the key meanwhile)."""
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, file)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


# -- signing ----------------------------------------------------------------------------------


def canonical(value: Any) -> bytes:
    """The bytes a tag covers: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def tag(kind: str, binding: str, body: bytes) -> str:
    """The tag of ``body`` stored as a ``kind`` entry under ``binding``."""
    message = b"\x1f".join((kind.encode(), binding.encode(), body))
    return MAC_PREFIX + hmac.new(store_key(), message, hashlib.sha256).hexdigest()


def seal(kind: str, binding: str, data: bytes) -> bytes:
    """``data`` (a JSON object) with its tag added as ``folpipe_mac``."""
    value = json.loads(data)
    if not isinstance(value, dict):
        raise TypeError(f"only JSON objects are stored, not {type(value).__name__}")
    value.pop(MAC_FIELD, None)
    body = canonical(value)
    field = f'"{MAC_FIELD}":"{tag(kind, binding, body)}"'.encode()
    return body[:-1] + (b"," if value else b"") + field + b"}"


def sign_object(kind: str, binding: str, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` (parsed JSON) with its tag added as ``folpipe_mac``, its keys kept in their
    order (for files read by people and by their first bytes: run records); :func:`verified`
    checks it."""
    plain = {key: item for key, item in value.items() if key != MAC_FIELD}
    return {**plain, MAC_FIELD: tag(kind, binding, canonical(plain))}


class DamagedSeal(ForgedEntry):
    """An entry that is not JSON within the stores' bounds: damage rather than a forgery."""


def unseal(kind: str, binding: str, data: bytes) -> bytes:
    """The entry without its tag, as canonical JSON; ``DamagedSeal`` when it is not JSON
    within the stores' bounds, ``ForgedEntry`` when it is not a JSON object or its tag is
    missing or wrong."""
    try:
        value = load_stored(data)
    except DamagedEntry as exc:  # not JSON within bounds: reported as damage (FP527)
        raise DamagedSeal(str(exc)) from None
    if not isinstance(value, dict):
        raise ForgedEntry("it is not a JSON object")
    return verified(kind, binding, value)


def verified(kind: str, binding: str, value: dict[str, Any]) -> bytes:
    """``value`` (parsed, its tag still in it) checked; its canonical bytes without the tag."""
    found = value.pop(MAC_FIELD, None)
    if not isinstance(found, str):
        raise ForgedEntry(
            f"it is not signed (no {MAC_FIELD}); written by hand or by an older folpipe"
        )
    try:
        body = canonical(value)
    except (ValueError, RecursionError):
        raise ForgedEntry("it cannot be read back as JSON") from None
    if not hmac.compare_digest(found, tag(kind, binding, body)):
        raise ForgedEntry("its signature does not match: edited, moved, or signed with another key")
    return body
