"""Parameters of a shell tool that declares none: the ``$VARS`` (and cmd-style ``%VARS%``) its
script reads, minus what the sandbox and folpipe provide."""

from __future__ import annotations

import re
from typing import Any

from ...authoring import object_schema
from ...workflow.envnames import is_dangerous_env_name

SHELL_ENV_NAMES = frozenset(
    {
        "PATH", "PATHEXT", "TEMP", "TMP", "TMPDIR", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR",
        "COMSPEC", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "COLORTERM", "SHELL", "HOME", "PWD",
        "OLDPWD", "IFS", "RANDOM", "LINENO", "SECONDS", "HOSTNAME", "UID", "EUID", "PPID",
        "OPTARG", "OPTIND", "REPLY", "PIPESTATUS", "FUNCNAME", "BASH_SOURCE", "BASH_REMATCH",
    }
)  # fmt: skip
PROVIDED_ENV_NAMES = frozenset(
    {
        "FOLPIPE_CONTEXT", "FOLPIPE_CONTEXT_FILE", "FOLPIPE_TASK_NAME", "FOLPIPE_TASK_PATH",
        "FOLPIPE_TASK_DIR", "FOLPIPE_WORKFLOW_ROOT", "FOLPIPE_STAGE", "FOLPIPE_HOOK_FILE",
        "AGENTFLOW_CONTEXT", "AGENTFLOW_CONTEXT_FILE", "AGENTFLOW_TASK_NAME",
    }
)  # fmt: skip
"""Variables folpipe sets for shell tools and hooks (``AGENTFLOW_*``: folpipe 0.1.8's names)."""
_SHELL_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(:?[-=?+])?")
CMD_VAR = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")
"""``%name%``: a Windows cmd variable (folpipe 0.1.8 read these as parameters too)."""
_SHELL_ASSIGN = re.compile(
    r"(?:^|[;&|\s(])(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?"
    r"([A-Za-z_][A-Za-z0-9_]*)\+?=|\bfor\s+([A-Za-z_]\w*)\s+in\b|\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*)"
)


def infer_shell_params(script: str) -> dict[str, Any]:
    """Parameters of a shell script that declares none: the ``$VARS`` it reads.

    Variables the sandbox provides, shell specials, variables the script assigns itself and
    variables that change how programs run (``GIT_SSH_COMMAND``, ``LD_PRELOAD``, ...: the model
    must never choose them) are not parameters. ``${NAME:-default}`` makes a parameter
    optional. ``%NAME%`` (cmd style) is a parameter too, although bash does not expand it
    (validate warns, FP229). Names are lower-cased (the script sees both spellings).
    """
    assigned = {name for match in _SHELL_ASSIGN.finditer(script) for name in match.groups() if name}
    properties: dict[str, Any] = {}
    optional: set[str] = set()
    for match in _SHELL_VAR.finditer(script):
        var = match.group(1)
        if _provided(var) or var in assigned:
            continue
        if is_dangerous_env_name(var):
            continue
        name = var.lower()
        if match.group(2):
            optional.add(name)
        properties.setdefault(name, {"type": "string"})
    for var in CMD_VAR.findall(script):
        if not _provided(var.upper()) and not is_dangerous_env_name(var):
            properties.setdefault(var.lower(), {"type": "string"})
    return object_schema(properties, [name for name in properties if name not in optional])


def _provided(var: str) -> bool:
    """Set by the sandbox, the shell or folpipe: never a parameter."""
    return var in SHELL_ENV_NAMES or var in PROVIDED_ENV_NAMES or var.startswith("BASH")
