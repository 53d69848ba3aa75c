"""Parameters of a shell tool that declares none: the ``$VARS`` its script reads."""

from __future__ import annotations

import re
from typing import Any

from ..workflow.envnames import is_dangerous_env_name
from ..workflow.toolschema import object_schema

SHELL_ENV_NAMES = frozenset(
    {
        "PATH", "PATHEXT", "TEMP", "TMP", "TMPDIR", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR",
        "COMSPEC", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "COLORTERM", "SHELL", "HOME", "PWD",
        "OLDPWD", "IFS", "RANDOM", "LINENO", "SECONDS", "HOSTNAME", "UID", "EUID", "PPID",
        "OPTARG", "OPTIND", "REPLY", "PIPESTATUS", "FUNCNAME", "BASH_SOURCE", "BASH_REMATCH",
        "FOLPIPE_CONTEXT",
    }
)  # fmt: skip
_SHELL_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(:?[-=?+])?")
_SHELL_ASSIGN = re.compile(
    r"(?:^|[;&|\s(])(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?"
    r"([A-Za-z_][A-Za-z0-9_]*)\+?=|\bfor\s+([A-Za-z_]\w*)\s+in\b|\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*)"
)


def infer_shell_params(script: str) -> dict[str, Any]:
    """Parameters of a shell script that declares none: the ``$VARS`` it reads.

    Variables the sandbox provides, shell specials, variables the script assigns itself and
    variables that change how programs run (``GIT_SSH_COMMAND``, ``LD_PRELOAD``, ...: the model
    must never choose them) are not parameters. ``${NAME:-default}`` makes a parameter
    optional. Names are lower-cased (the script sees both spellings).
    """
    assigned = {name for match in _SHELL_ASSIGN.finditer(script) for name in match.groups() if name}
    properties: dict[str, Any] = {}
    optional: set[str] = set()
    for match in _SHELL_VAR.finditer(script):
        var = match.group(1)
        if var in SHELL_ENV_NAMES or var in assigned or var.startswith("BASH"):
            continue
        if is_dangerous_env_name(var):
            continue
        name = var.lower()
        if match.group(2):
            optional.add(name)
        properties.setdefault(name, {"type": "string"})
    return object_schema(properties, [name for name in properties if name not in optional])
