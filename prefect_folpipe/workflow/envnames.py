"""Environment variables a shell tool's parameter must never set.

A shell tool receives its arguments as environment variables (``query`` -> ``$query`` and
``$QUERY``). Some variables change what the programs a script starts *do*: ``GIT_SSH_COMMAND``
makes ``git`` run a command, ``LD_PRELOAD`` loads a library into every process, ``BASH_ENV``
is sourced by every non-interactive bash, ``PYTHONPATH`` / ``NODE_OPTIONS`` inject code,
``http_proxy`` reroutes ``curl``. A parameter whose name (in any case) is one of them would
let the model choose that value, so ``folpipe validate`` refuses it (FP237) and the runtime
refuses the argument.
"""

from __future__ import annotations

import re

DANGEROUS_NAMES = frozenset(
    {
        "BASH_ENV", "ENV", "IFS", "CDPATH", "SHELLOPTS", "BASHOPTS", "PS1", "PS2", "PS3", "PS4",
        "PROMPT_COMMAND", "GLOBIGNORE", "HOME", "ZDOTDIR", "INPUTRC", "PYTHONPATH",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "EDITOR",
        "VISUAL", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE", "GCONV_PATH",
        "LOCPATH", "GLIBC_TUNABLES", "HOSTALIASES", "RESOLV_HOST_CONF", "LOCALDOMAIN",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "CURL_HOME",
        "WGETRC", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS",
        "TERMINFO", "TERMINFO_DIRS", "MAIL", "MAILPATH", "KUBECONFIG", "DOCKER_HOST",
        "OPENSSL_CONF", "OPENSSL_ENGINES", "TZDIR",
    }
)  # fmt: skip
"""Variables that make programs load code or configuration, or run commands."""

DANGEROUS_PATTERN = re.compile(
    r"^(?:LD_|DYLD_|BASH_|GIT_|SSH_|PYTHON[A-Z]|PERL|RUBY|NODE_|NPM_CONFIG_|PIP_|UV_|"
    r"MALLOC_|(?:HTTPS?|ALL|NO|FTP)_PROXY$)"
)
"""Families of such variables (``GIT_*``, ``LD_*``, ``PYTHONxxx``, proxies, ...)."""


def is_dangerous_env_name(name: str) -> bool:
    """Whether a parameter called ``name`` (any case) would set a dangerous variable."""
    upper = name.upper()
    return upper in DANGEROUS_NAMES or bool(DANGEROUS_PATTERN.match(upper))
