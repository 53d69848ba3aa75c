"""The one redaction registry: which values are secret, and masking them wherever they appear.

Every sink that persists or prints run data masks through :data:`SECRETS` — a task's context
delta and answer (hence checkpoints, ``--json``, later tasks' prompts), artifacts, the
cassette recorder, logs, error messages and tool results. Its secrets are:

* the values of environment variables whose name matches :data:`SECRET_NAME_PATTERNS`
  (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*PAT``,
  ``*CREDENTIAL*``, case-insensitive), read from the environment at each use;
* the password of a URL in *any* environment variable
  (``DATABASE_URL=postgres://user:pw@host/db``), and that variable's whole value;
* values registered while the process runs (:meth:`Redactor.register`): API keys read from
  ``api_key_env`` or from a Prefect Secret block (``api_key_secret``), the variables a tool
  declares in ``> env:``. A secret fetched in the middle of a run is masked from then on, by
  every sink, since they all read this one registry when they write.

Values shorter than :data:`MIN_SECRET_LENGTH` characters are not masked as bare text (that
would mangle ordinary words); any ``scheme://user:password@`` in a text has its password
masked whatever its length.

Tool output goes through :func:`redact`: secret values (:func:`redact_secrets`) and, unless
``security.allow_sensitive_files`` is set, sensitive file names (:func:`redact_filenames`:
``.env``, ``*.env``, ``*.key``, ``*.pem``, ``*.p12``, ``secrets.*``, a path-qualified name
replaced whole, the ``.env.example`` family of templates left alone).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6
SECRET_NAME_PATTERNS: tuple[str, ...] = (
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PAT",
    "*CREDENTIAL*",
)
"""Environment variable names whose values are secrets (``fnmatch``, on the upper-cased name)."""
_NAME = re.compile("|".join(fnmatch.translate(p) for p in SECRET_NAME_PATTERNS))
URL_CREDENTIALS = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:)[^\s/@]+(?=@)")
"""``scheme://user:password@`` in a text: the password is masked."""


def is_secret_name(name: str) -> bool:
    """Whether an environment variable called ``name`` holds a secret."""
    return bool(_NAME.match(name.upper()))


def url_password(value: str) -> str | None:
    """The password of ``value`` when it is a URL carrying one."""
    if "://" not in value or "@" not in value:
        return None
    try:
        return urlsplit(value.strip()).password or None
    except ValueError:
        return None


def env_secrets(env: Mapping[str, str] | None = None) -> set[str]:
    """Secret values of an environment (default ``os.environ``): see the module docstring."""
    if env is None:
        return set(_process_env_secrets())
    return _secrets_of(env)


_PROCESS_ENV: tuple[dict[Any, Any], frozenset[str]] | None = None
"""``os.environ``'s raw data when its secrets were last found, and those secrets."""


def _process_env_secrets() -> frozenset[str]:
    """``os.environ``'s secrets, found again only when the environment changed. Every masked
    log line, event and artifact asks (70,000 times in a 1,000-task run, which spent 40 % of
    its CPU matching names): comparing the raw data is one C-level dict comparison."""
    global _PROCESS_ENV
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):  # not CPython's os.environ: no snapshot to compare
        return frozenset(_secrets_of(os.environ))
    known = _PROCESS_ENV
    if known is not None and known[0] == data:
        return known[1]
    snapshot = dict(data)
    secrets = frozenset(_secrets_of(os.environ))
    _PROCESS_ENV = (snapshot, secrets)
    return secrets


def _secrets_of(source: Mapping[str, str]) -> set[str]:
    found: set[str] = set()
    for name, value in source.items():
        if not value:
            continue
        if is_secret_name(name):
            found.add(value)
        password = url_password(value)
        if password:
            found.update((password, value))
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH}


@lru_cache(maxsize=64)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    if not values:
        return None
    return re.compile("|".join(re.escape(v) for v in values))


def _longest_first(found: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


class Redactor:
    """A registry of secret values and the masking every sink applies."""

    def __init__(self) -> None:
        self._registered: set[str] = set()
        self._lock = threading.Lock()
        self._sorted: tuple[frozenset[str], int, tuple[str, ...]] | None = None
        """The process's secrets, sorted, for the environment's secrets and registrations
        they were sorted for (every log line, event and span asks: most ask with no change)."""
        self._registrations = 0

    def register(self, *values: str | None) -> None:
        """Add secrets discovered at run time (a resolved Secret block, an API key, ...)."""
        with self._lock:
            self._registered.update(
                v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH
            )
            self._registrations += 1

    def values(
        self, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()
    ) -> tuple[str, ...]:
        """Every secret to mask, longest first."""
        if env is None and not extra:
            return self._process_values()
        with self._lock:
            found = env_secrets(env) | self._registered
        found.update(v for v in extra if v and len(v) >= MIN_SECRET_LENGTH)
        return _longest_first(found)

    def _process_values(self) -> tuple[str, ...]:
        """:meth:`values` of the process's environment, sorted again only after a change."""
        with self._lock:
            from_env, registrations = _process_env_secrets(), self._registrations
            known = self._sorted
            if known is not None and known[0] is from_env and known[1] == registrations:
                return known[2]
            found = _longest_first(from_env | self._registered)
            self._sorted = (from_env, registrations, found)
            return found

    def text(
        self, text: str, *, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()
    ) -> str:
        """``text`` with every secret (and every URL password) replaced by ``[REDACTED]``."""
        return _mask(text, _pattern(self.values(env, extra)))

    def data(self, value: Any, *, env: Mapping[str, str] | None = None) -> Any:
        """A copy of JSON-like data (dicts, lists, tuples, strings) with every string, keys
        included, masked; other values are returned as they are."""
        pattern = _pattern(self.values(env))
        return _mask_data(value, pattern)


def _mask(text: str, pattern: re.Pattern[str] | None) -> str:
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    if "://" in text:
        text = URL_CREDENTIALS.sub(lambda m: m.group("head") + REDACTED, text)
    return text


def _mask_data(value: Any, pattern: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return _mask(value, pattern)
    if isinstance(value, Mapping):
        return {
            (_mask(k, pattern) if isinstance(k, str) else k): _mask_data(v, pattern)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_data(v, pattern) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask_data(v, pattern) for v in value)
    return value


SECRETS = Redactor()
"""The process's registry (secrets stay registered for the life of the process)."""


def mask(text: str) -> str:
    """``SECRETS.text(text)``."""
    return SECRETS.text(text)


def mask_data(value: Any) -> Any:
    """``SECRETS.data(value)``."""
    return SECRETS.data(value)


def register_secret(*values: str | None) -> None:
    """``SECRETS.register(...)``."""
    SECRETS.register(*values)


def mask_exception(exc: BaseException) -> BaseException:
    """Mask ``exc`` in place — its arguments, and the text attributes of our own errors
    (``OutputValidationError.attempts`` holds model answers) — along its cause/context chain,
    before Prefect logs, pickles or stores it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        pattern = _pattern(SECRETS.values())
        try:
            current.args = tuple(_mask_data(arg, pattern) for arg in current.args)
            for key, value in list(vars(current).items()):
                if isinstance(value, str | list | dict | tuple):
                    setattr(current, key, _mask_data(value, pattern))
        except (AttributeError, TypeError):  # a read-only exception type: leave it
            pass
        current = current.__cause__ or current.__context__
    return exc


class RedactingLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """A logger (or adapter, such as Prefect's run logger) whose messages are formatted and
    masked before they are handed on: hooks, tools and the agent log through it."""

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        super().__init__(logger, None)  # type: ignore[arg-type]

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = " ".join(str(part) for part in (msg, *args))
        self.logger.log(level, mask(text), **kwargs)


def redacting(
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> logging.Logger | logging.LoggerAdapter[Any]:
    """``logger`` wrapped in a :class:`RedactingLogger` (once)."""
    return logger if isinstance(logger, RedactingLogger) else RedactingLogger(logger)


# ----------------------------------------------------------------- tool output

_DIR_PART = r"(?:[\w.~@+-]*[/\\])*"
_SENSITIVE_NAME = (
    r"(?:\.env(?:\.(?!(?:example|sample|template|dist)\b)[\w+-]+)?"  # .env, .env.local
    r"|[\w.+-]*[\w+-]\.(?:env|key|pem|p12)"  # *.env *.key *.pem *.p12
    r"|secrets\.[\w+-]+(?:\.[\w+-]+)*)"  # secrets.*
)
SENSITIVE_FILE = re.compile(
    rf"(?<![\w.~@+/\\-]){_DIR_PART}{_SENSITIVE_NAME}(?![\w+(-]|\.\w)",
    re.IGNORECASE,
)


def redact_filenames(text: str) -> str:
    """``text`` with every sensitive file name (and its directory part) replaced."""
    return SENSITIVE_FILE.sub(REDACTED, text)


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Secret values of ``env`` (default ``os.environ``), longest first (see the registry)."""
    return sorted(env_secrets(env), key=len, reverse=True)


def redact_secrets(
    text: str, env: Mapping[str, str] | None = None, *, extra: Iterable[str] = ()
) -> str:
    """``text`` with every secret of the registry (and of ``extra``, e.g. the variables an http
    tool was allowed to read) masked."""
    return SECRETS.text(text, env=env, extra=extra)


def redact(
    text: str,
    *,
    allow_sensitive_files: bool = False,
    env: Mapping[str, str] | None = None,
    extra: Iterable[str] = (),
) -> str:
    """Everything a tool result goes through before the model sees it."""
    text = redact_secrets(text, env, extra=extra)
    return text if allow_sensitive_files else redact_filenames(text)
