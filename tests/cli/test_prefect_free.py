"""The spec-layer commands never import Prefect, so ``folpipe validate`` stays fast."""

from __future__ import annotations

import subprocess
import sys

MODULES = (
    "prefect_folpipe.plan._plan",
    "prefect_folpipe.plan._views",
    "prefect_folpipe.cli._render",
    "prefect_folpipe.cli.validate",
    "prefect_folpipe.cli.tree",
    "prefect_folpipe.cli.graph",
    "prefect_folpipe.cli.init",
    "prefect_folpipe.cli.schema",
)


def test_importing_the_spec_layer_commands_does_not_import_prefect() -> None:
    code = "import sys\n" + "".join(f"import {module}\n" for module in MODULES)
    code += "print(sorted(m for m in sys.modules if m == 'prefect' or m.startswith('prefect.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_of_every_command_does_not_import_prefect() -> None:
    code = (
        "import sys\n"
        "from prefect_folpipe.cli import main\n"
        "for name in ('validate', 'tree', 'graph', 'init', 'schema'):\n"
        "    try:\n"
        "        main([name, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('prefect' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
