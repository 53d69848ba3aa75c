"""Redaction of tool output (docs/tools.md, "Redaction") and of secret values.

* :func:`redact_filenames` replaces sensitive file names (``.env``, ``*.env``, ``*.key``,
  ``*.pem``, ``*.p12``, ``secrets.*``, case-insensitive) found anywhere in a text with
  ``[REDACTED]``. A path-qualified name is replaced **whole**, directory part included
  (``/home/me/app/.env``, ``config/app.env``, ``./secrets.yaml`` all become ``[REDACTED]``),
  since the directory often says as much as the name (a user name, a vault layout).
  ``.env.<anything>`` (``.env.local``, ``.env.production``) is redacted too, except the
  templates ``.env.example`` / ``.sample`` / ``.template`` / ``.dist``. Names that only start
  like one (``.environment``, ``app.env.example``) and calls (``secrets.token_hex(``) are left
  alone.
* :func:`redact_secrets` masks secret *values* wherever they appear, through the one
  redaction registry (``workflow.redaction.SECRETS``): variables named ``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*PAT``, ``*CREDENTIAL*``, URL passwords, keys
  resolved at run time (Secret blocks), and any variable a tool declares it reads
  (``> env: [...]``); values shorter than 6 characters are ignored.
* :func:`redact` does both; ``allow_sensitive_files`` (``security.allow_sensitive_files``)
  turns off the file-name part only. Secret values are always masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..workflow.redaction import MIN_SECRET_LENGTH, REDACTED, SECRETS, env_secrets

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SENSITIVE_FILE",
    "redact",
    "redact_filenames",
    "redact_secrets",
    "secret_values",
]

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
