"""``folpipe resume PATH [--flow-run ID] --from TASK``: re-run a recorded run from a task.

* With ``PREFECT_API_URL`` set and ``--flow-run ID`` naming a deployment's run: a new run of
  that deployment on its work pool (``deploy.rerun``), its parameters plus ``rerun_from`` and
  ``restore_from``; ``--watch`` waits for its outcome.
* Otherwise the run (``--flow-run ID``, else the latest finished one) is re-run here with its
  own context, provider override and checkpoint lineage, asking the named tasks and what
  follows them again (``folpipe run --from``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._api import WATCH_TIMEOUT_S, api_configured, through_api
from ._render import EXIT_FAILED, EXIT_OK, get_console, print_json
from ._runref import find_run
from .run import execute, run_options


def rerun(
    workflow: Any, flow_run_id: str | None, names: tuple[str, ...], *, watch: bool, as_json: bool
) -> int:
    """Re-run the run ``flow_run_id`` names from ``names``; the exit code."""
    from ..compile.rerun import resolve_targets

    paths = resolve_targets(workflow, names)  # FP405 before anything else
    if flow_run_id and api_configured() and _deployment_run(flow_run_id):
        return _through_api(flow_run_id, paths, watch=watch, as_json=as_json)
    record = find_run(Path(workflow.root_dir), flow_run_id)
    get_console(stderr=as_json).print(
        f"re-running run {record.get('flow_run_id') or record['name']} from "
        f"{', '.join(paths)}; the tasks before come from its checkpoints",
        highlight=False,
        soft_wrap=True,
    )
    replies = Path(record["replies"]) if record.get("replies") else None
    options = run_options(record.get("provider"), replies, fresh=False)
    options.lineage = record.get("lineage") or record.get("flow_run_id")
    options.across_runs = record.get("reuse_checkpoints")
    options.rerun_from = paths
    return int(execute(workflow, record.get("context") or {}, options, as_json))


def _deployment_run(flow_run_id: str) -> bool:
    from ..deploy.resume import read_run

    return bool(through_api(read_run(flow_run_id)).via_api)


def _through_api(flow_run_id: str, paths: tuple[str, ...], *, watch: bool, as_json: bool) -> int:
    from ..deploy.rerun import rerun_through_api
    from ..deploy.resume import wait_until_final

    created = through_api(rerun_through_api(flow_run_id, paths))
    console = get_console(stderr=as_json)
    console.print(
        f"re-running flow run {flow_run_id} from {', '.join(paths)} through the Prefect API: "
        f"new flow run {created['name']} ({created['flow_run_id']}) of deployment "
        f"{created['deployment']!r} on work pool {created['work_pool']!r}; the tasks before "
        "come from the first run's checkpoints",
        soft_wrap=True,
        highlight=False,
    )
    code = EXIT_OK
    if watch:
        state = through_api(wait_until_final(created["flow_run_id"], WATCH_TIMEOUT_S))
        created["state"] = state.name if state is not None else "Unknown"
        console.print(f"flow run {created['name']}: {created['state']}")
        code = EXIT_OK if state is not None and state.is_completed() else EXIT_FAILED
    if as_json:
        print_json({"resumed": "api", **created})
    return code
