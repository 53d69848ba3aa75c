"""Issue 11 point 18: shell tool parameters never name a variable that changes how programs run
(``GIT_SSH_COMMAND``, ``LD_PRELOAD``, ``PYTHONPATH``, ``BASH_ENV``, proxies, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import write_workflow

from prefect_folpipe.errors import ToolError
from prefect_folpipe.loader.tools._shellparams import infer_shell_params
from prefect_folpipe.tools.shell import sandbox_env
from prefect_folpipe.validate import validate_workflow

DANGEROUS = [
    "git_ssh_command",
    "GIT_SSH_COMMAND",
    "ld_preload",
    "pythonpath",
    "bash_env",
    "http_proxy",
    "node_options",
    "git_config_global",
    "pythonstartup",
]


@pytest.mark.parametrize("name", DANGEROUS)
def test_validate_refuses_a_declared_dangerous_parameter(tmp_path: Path, name: str) -> None:
    tools = f"## fetch\n> type: shell\n> params: {name} (str), url (str)\n\n```bash\ngit x\n```\n"
    write_workflow(tmp_path, {"instructions.md": "x", "tools.md": tools})
    found = [d for d in validate_workflow(tmp_path) if d.code == "FP237"]
    assert len(found) == 1
    assert name.upper() in found[0].message
    assert found[0].file == "tools.md"


@pytest.mark.parametrize("name", DANGEROUS)
def test_the_runtime_refuses_the_argument(name: str) -> None:
    with pytest.raises(ToolError):
        sandbox_env({name: "ssh -o ProxyCommand=evil"})


def test_inferred_parameters_skip_dangerous_variables() -> None:
    schema = infer_shell_params('git clone "$REPO"; echo "$GIT_SSH_COMMAND $LD_PRELOAD $ftp_proxy"')
    assert list(schema["properties"]) == ["repo"]


def test_ordinary_names_still_work() -> None:
    env = sandbox_env({"path": "a.txt", "query": "x", "python_version": "3.11", "editor_note": "y"})
    assert env["QUERY"] == "x"
    assert env["PYTHON_VERSION"] == "3.11"
