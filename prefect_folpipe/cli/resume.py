"""``folpipe resume PATH``: finish the latest run of a workflow that did not complete.

* With ``PREFECT_API_URL`` set and a failed or crashed **deployment** run (the latest, or
  ``--flow-run ID``), the run is retried through the API as the UI's Retry does: the same flow
  run goes back to Scheduled, the deployment's work pool runs it, and every task it finished
  comes back Cached (``--watch`` waits for the outcome).
* Otherwise the local run is taken up here. Every run records itself as it starts and again
  as it ends (``.folpipe/runs/``), so a run that failed, was interrupted (SIGINT, SIGTERM) or
  crashed with its process (SIGKILL, OOM) is on record. ``resume`` takes the latest of them
  that was not completed since (or ``--flow-run ID``), says which one it took, and runs it
  again with that run's own context, provider override and checkpoint lineage: every task
  whose checkpoint is still valid is reused (reported ``cached``), so only what did not
  finish runs.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from ._api import WATCH_TIMEOUT_S, api_configured, through_api
from ._render import EXIT_FAILED, EXIT_OK, get_console, handle_errors, print_json
from .run import execute, load, run_options


def _record_time(record: dict[str, Any]) -> float:
    for key in ("started_at", "finished_at"):
        with_time = record.get(key)
        if with_time:
            try:
                return datetime.fromisoformat(with_time).timestamp()
            except ValueError:
                continue
    return 0.0


def _local_record(root: Path, flow_run_id: str | None) -> dict[str, Any] | None:
    from ..compile.report import list_runs, resumable_run

    if flow_run_id is None:
        return resumable_run(root)
    found = [r for r in list_runs(root) if str(r.get("flow_run_id")) == flow_run_id]
    return found[-1] if found else None


def choose(workflow: Any, flow_run_id: str | None) -> tuple[str, Any]:
    """``("api", Resumable)`` for a deployment run the API can retry, else ``("local",
    record)``; FP404 when there is nothing to resume."""
    record = _local_record(workflow.root_dir, flow_run_id)
    if api_configured():
        run = _api_candidate(workflow, flow_run_id, has_record=record is not None)
        if run is not None and run.via_api and _newer(run, record):
            return "api", run
    if record is None:
        which = (
            f"run {flow_run_id} of {workflow.root_dir} is not recorded here"
            if flow_run_id
            else f"every recorded run of {workflow.root_dir} completed (or none is recorded)"
        )
        raise ConfigError(
            f"nothing to resume: {which}",
            code="FP404",
            hint="run it with `folpipe run PATH`; resume finishes a run that failed, was "
            "interrupted or crashed (a deployment's run through the Prefect API when "
            "PREFECT_API_URL is set)",
        )
    return "local", record


def _api_candidate(workflow: Any, flow_run_id: str | None, *, has_record: bool) -> Any:
    """The run the API would retry: ``--flow-run ID``, else the folder's latest failed one."""
    from ..deploy.resume import latest_failed_run, read_run

    if flow_run_id is None:
        return through_api(latest_failed_run(workflow))
    try:
        return through_api(read_run(flow_run_id))
    except ConfigError:
        if has_record:  # a local run the API does not know (another history): local resume
            return None
        raise


def _newer(run: Any, record: dict[str, Any] | None) -> bool:
    """The API's run is the one to take up: no local record, the record is of that very run
    (a deployment's flow run records itself too), or the record is older."""
    if record is None or str(record.get("flow_run_id")) == run.flow_run_id:
        return True
    return run.started >= _record_time(record)


def resume_through_api(run: Any, *, watch: bool, as_json: bool) -> int:
    """Retry the deployment's run through the API; with ``watch``, wait for its outcome."""
    from ..deploy.resume import retry_through_api, wait_until_final

    retried = through_api(retry_through_api(run))
    console = get_console(stderr=as_json)
    console.print(
        f"resuming flow run {run.name} ({run.flow_run_id}), {run.state}, through the Prefect API:"
        f" deployment {retried['deployment']!r} runs it again on work pool "
        f"{retried['work_pool']!r}; the tasks it finished come back from checkpoints",
        soft_wrap=True,
    )
    code = EXIT_OK
    if watch:
        state = through_api(wait_until_final(run.flow_run_id, WATCH_TIMEOUT_S))
        retried["state"] = state.name if state is not None else "Unknown"
        console.print(f"flow run {run.name}: {retried['state']}")
        code = EXIT_OK if state is not None and state.is_completed() else EXIT_FAILED
    if as_json:
        print_json({"resumed": "api", **retried})
    return code


def rerun_of(record: dict[str, Any]) -> tuple[tuple[str, ...], str | None]:
    """The ``--from`` tasks of a recorded run and what keyed its re-run passes: a resume of
    it asks the same tasks again and replays what those passes already paid for."""
    names = record.get("rerun_from")
    if not isinstance(names, list) or not names:
        return (), None
    rerun_id = record.get("rerun_id")
    return tuple(str(name) for name in names), rerun_id if isinstance(rerun_id, str) else None


def describe(record: dict[str, Any]) -> str:
    """One line naming the run ``resume`` took and what did not finish in it."""
    done = ("completed", "cached", "skipped")
    unfinished = [
        t["path"] for t in record.get("tasks", []) if t.get("path") and t.get("status") not in done
    ]
    when = record.get("started_at") or record.get("finished_at") or "?"
    names, _ = rerun_of(record)
    rerun = f", a re-run from {', '.join(names)}" if names else ""
    line = (
        f"resuming run {record.get('flow_run_id') or Path(record['file']).stem} "
        f"(started {when}, {record.get('status')}{rerun})"
    )
    if record.get("error"):
        line += f": {record['error']}"
    listed = ", ".join(unfinished) or ("-" if record.get("tasks") else "not recorded")
    return f"{line}; not finished: {listed}"


@click.command(name="resume")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--flow-run", "flow_run_id", help="Resume this flow run (id), not the latest.")
@click.option(
    "--watch", is_flag=True, help="Through the API: wait until the retried run ends (exit 0/1)."
)
@click.option(
    "--from",
    "rerun_from",
    multiple=True,
    metavar="TASK",
    help="Re-run the run (--flow-run, else the latest) from TASK: it and what follows are "
    "asked again, the rest restored (a deployment's run: a new run on its work pool).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def command(
    path: Path, flow_run_id: str | None, watch: bool, rerun_from: tuple[str, ...], as_json: bool
) -> None:
    """Finish the latest run of the workflow at PATH that did not complete (failed,
    interrupted or crashed), reusing its checkpoints; a deployment's failed or crashed run is
    retried through the Prefect API when PREFECT_API_URL is set. With --from TASK, re-run a
    run from that task instead."""
    with handle_errors(json_output=as_json, root=path):
        workflow = load(path)
        if rerun_from:
            from ._rerun import rerun

            code = rerun(workflow, flow_run_id, rerun_from, watch=watch, as_json=as_json)
            raise click.exceptions.Exit(code)
        how, target = choose(workflow, flow_run_id)
        if how == "api":
            raise click.exceptions.Exit(resume_through_api(target, watch=watch, as_json=as_json))
    record = target
    # --json keeps stdout for the one document: the choice is said on stderr
    get_console(stderr=as_json).print(describe(record), highlight=False, soft_wrap=True)
    replies = Path(record["replies"]) if record.get("replies") else None
    options = run_options(record.get("provider"), replies, fresh=bool(record.get("fresh")))
    options.lineage = record.get("lineage") or record.get("flow_run_id")
    options.across_runs = record.get("reuse_checkpoints")
    options.resumed_from = Path(record["file"]).name
    options.rerun_from, options.rerun_id = rerun_of(record)
    raise click.exceptions.Exit(execute(workflow, record.get("context") or {}, options, as_json))
