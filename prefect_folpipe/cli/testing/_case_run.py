"""Running one ``folpipe test`` case: stubs in, a real run, expectations checked.

* Model stubs become a scripted replies file: every task runs on the scripted provider, so no
  real provider is ever constructed.
* Tool stubs answer through the tool runtime (``tools.runtime.TOOL_STUBS``) after the model's
  arguments were checked against the tool's schema.
* A subtree stub replaces the task at that path by a leaf whose answer is the stub, checked
  against the task's declared outputs exactly as a model's answer is (FP312 when it does not
  fit); its children, hooks and tools do not run.

Everything else (conditions, loops, graph edges, failure policies, output checks, hooks,
unstubbed tools) runs for real, on Prefect, with checkpoints in a scratch folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ...agent.output import check_output
from ...agent.result import TaskOutcome
from ...errors import OutputValidationError
from ...redaction import SECRETS
from ...tools.toolbox import TOOL_STUBS
from ...workflow.context import answer_delta
from ...workflow.tree import Task, Workflow
from ._cases_file import TestCase, TestFileError
from ._logs import TEST_TAG, expected_failures
from ._strict import Replay, StrictProvider

STUB_INSTRUCTIONS = "(stubbed by folpipe test)"


@dataclass
class CaseResult:
    """The verdict on one case."""

    case: TestCase
    failures: list[str] = field(default_factory=list)
    status: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.case.name,
            "file": self.case.file,
            "line": self.case.line,
            "ok": self.ok,
            "status": self.status,
            "failures": list(self.failures),
            "duration_s": round(self.duration_s, 3),
        }


def run_case(workflow: Workflow, case: TestCase, scratch: Path) -> CaseResult:
    """Run ``case`` against ``workflow`` (loaded and valid); never raises for a failing run."""
    from prefect import tags

    from ...compile import run_workflow
    from ...compile.options import RunOptions

    started = time.monotonic()
    stubbed = stub_subtrees(workflow, case)
    scratch.mkdir(parents=True, exist_ok=True)
    replies = scratch / "replies.yaml"
    replies.write_text(yaml.safe_dump(_replies(case.models), sort_keys=False), encoding="utf-8")
    calls: list[dict[str, Any]] = []
    replay = replay_of(workflow, case)
    options = RunOptions(
        provider="scripted",
        replies=replies,
        fresh=True,
        result_storage=scratch / "results",
        artifacts="none",
        runner=_runner(case, calls, replay),
        keep_run_record=False,
        task_tags=False,
        approvals=gate_answers(workflow, case),
    )
    with tags(TEST_TAG), expected_failures(case.expect):
        result = run_workflow(stubbed, dict(case.context), options=options)
    if replay is not None:  # compare with what was recorded: normalised, secrets masked
        result.context = SECRETS.data(replay.normal.data(result.context))
    failures = check_expectations(case.expect, result, calls)
    if replay is not None:  # a request that changed explains every expectation it broke
        failures = list(replay.failures) or failures + list(replay.unused())
    return CaseResult(case, failures, result.status, time.monotonic() - started)


def gate_answers(workflow: Workflow, case: TestCase) -> dict[str, dict[str, Any]]:
    """The case's approval answers, by task path, or by tool name / ``TASK/TOOL`` for a gated
    tool's calls (anything else: FP181)."""
    gates = {task.path: task for task in workflow.tasks() if task.config.approval is not None}
    by_name = {task.name: path for path, task in gates.items()}
    tools = {
        name
        for task in workflow.tasks()
        for spec in task.tools
        if spec.metadata.get("approval")
        for name in (spec.name, f"{task.name}/{spec.name}", f"{task.path}/{spec.name}")
    }
    answers: dict[str, dict[str, Any]] = {}
    for key, answer in case.approvals.items():
        path = key if key in gates or key in tools else by_name.get(key)
        if path is None:
            raise TestFileError(
                f"{case.file}:{case.line}: case {case.name!r} answers {key!r}, which has no "
                "approval gate",
                hint=f"gated tasks and tools: {', '.join(sorted({*gates, *tools})) or 'none'}",
            )
        answers[path] = dict(answer)
    return answers


def _replies(models: Mapping[str, Any]) -> dict[str, Any]:
    script: dict[str, Any] = {"tasks": {k: v for k, v in models.items() if k != "default"}}
    if "default" in models:
        script["default"] = models["default"]
    return script


def stub_subtrees(workflow: Workflow, case: TestCase) -> Workflow:
    """``workflow`` with every stubbed task replaced by a leaf (unknown paths: FP181)."""
    paths = {task.path for task in workflow.tasks()}
    for path in case.stubs:
        if path not in paths:
            raise TestFileError(
                f"{case.file}:{case.line}: case {case.name!r} stubs unknown task {path!r}",
                hint=f"task paths: {', '.join(sorted(p for p in paths if p)) or '(root only)'}",
            )
    return replace(workflow, root=_stubbed(workflow.root, case.stubs))


def _stubbed(task: Task, stubs: Mapping[str, Any]) -> Task:
    if task.path in stubs:
        return replace(
            task,
            children=(),
            disabled_children=(),
            hooks={},
            tools=(),
            own_tools=(),
            instructions=STUB_INSTRUCTIONS,
            system_prompt=STUB_INSTRUCTIONS,
        )
    if not task.children:
        return task
    return replace(task, children=tuple(_stubbed(child, stubs) for child in task.children))


def replay_of(workflow: Workflow, case: TestCase) -> Replay | None:
    """The strict replay of a recorded case (``_strict``); ``None`` for a hand-written one."""
    if not case.recorded:
        return None
    safe = {
        task.path: frozenset(
            spec.name for spec in task.tools if str(spec.metadata.get("replay")) == "safe"
        )
        for task in workflow.tasks()
    }
    return Replay(case.recorded, Path(workflow.root_dir), safe)


def _runner(case: TestCase, calls: list[dict[str, Any]], replay: Replay | None = None) -> Any:
    """``agent.run_task`` with the case's stubs: subtree stubs answer, tool stubs apply; a
    recorded case answers from its recording and checks every request (``_strict``)."""
    from ...agent import run_task

    async def runner(task: Task, workflow: Workflow, context: Any, **kwargs: Any) -> Any:
        if task.path in case.stubs:
            return stub_outcome(task, workflow, case.stubs[task.path])
        stubs: Mapping[str, Any] = case.tools
        if replay is not None and task.runs_agent:
            recorded = replay.take(
                task.path, kwargs.get("phase", "single"), kwargs.get("iteration")
            )
            kwargs["provider"] = StrictProvider(replay, task.path, recorded)
            stubs = replay.tool_stubs(task.path, recorded or {})
        token = TOOL_STUBS.set(stubs)
        try:
            outcome = await run_task(task, workflow, context, **kwargs)
        finally:
            TOOL_STUBS.reset(token)
        calls.extend({"task": task.path, **entry} for entry in outcome.tool_log)
        return outcome

    return runner


def stub_outcome(task: Task, workflow: Workflow, value: Any) -> TaskOutcome:
    """A stubbed task's outcome: with declared outputs, its value checked like a model's
    answer; without, a string is its answer text and a mapping the keys its subtree adds."""
    if task.config.output is None:
        if isinstance(value, Mapping):
            return TaskOutcome(delta=dict(value), text=json.dumps(value, default=str))
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return TaskOutcome(delta=answer_delta(task, None, text), text=text)
    text = f"```json\n{json.dumps(value, default=str)}\n```"
    checked = check_output(text, task.config.output_types)
    if not checked.ok:
        raise OutputValidationError(
            f"task {task.path!r}: the stubbed output does not fit the declared outputs: "
            + "; ".join(checked.errors),
            hint="give every declared key a value of its declared type",
        )
    delta = answer_delta(task, checked.outputs, text, declared=workflow.declared_outputs)
    return TaskOutcome(delta=delta, text=text, outputs=dict(checked.outputs))


# --- expectations -----------------------------------------------------------------------------


def check_expectations(
    expect: Mapping[str, Any], result: Any, calls: list[dict[str, Any]]
) -> list[str]:
    """Every expectation that does not hold, in words."""
    failures: list[str] = []
    if "status" in expect and result.status != expect["status"]:
        error = f" ({result.error})" if result.error else ""
        failures.append(f"status is {result.status!r}, expected {expect['status']!r}{error}")
    for problem in subset_problems(expect.get("context") or {}, result.context, "context"):
        failures.append(problem)
    for path, wanted in (expect.get("paths") or {}).items():
        found = json_path(result.context, str(path))
        if found != wanted:
            failures.append(f"{path} is {_short(found)}, expected {_short(wanted)}")
    statuses = {row["path"]: row for row in result.tasks}
    for key, allowed in (("ran", ("completed", "cached")), ("skipped", ("skipped",))):
        failures += _status_problems(expect.get(key) or [], statuses, allowed, key)
    failures += _status_problems(expect.get("failed") or [], statuses, ("failed",), "failed")
    for wanted in expect.get("tool_calls") or []:
        if not any(_call_matches(wanted, call) for call in calls):
            made = ", ".join(f"{c['name']}({_short(c.get('arguments'))})" for c in calls)
            failures.append(f"no tool call matches {_short(wanted)} (made: {made or 'none'})")
    return failures


def _status_problems(
    wanted: list[str], rows: Mapping[str, Mapping[str, Any]], allowed: tuple[str, ...], key: str
) -> list[str]:
    problems = []
    for entry in wanted:
        matches = [r for p, r in rows.items() if p == entry or r.get("name") == entry]
        if not matches:
            problems.append(f"{key}: no task {entry!r}")
        elif not any(row["status"] in allowed for row in matches):
            problems.append(f"{key}: task {entry!r} is {matches[0]['status']!r}")
    return problems


def _call_matches(wanted: Any, call: Mapping[str, Any]) -> bool:
    if not isinstance(wanted, Mapping) or wanted.get("name") != call.get("name"):
        return False
    if "task" in wanted and wanted["task"] != call.get("task"):
        return False
    return not subset_problems(wanted.get("arguments") or {}, call.get("arguments") or {}, "")


def subset_problems(wanted: Any, actual: Any, where: str) -> list[str]:
    """Where ``wanted`` is not contained in ``actual`` (mappings recursively, else ==)."""
    if isinstance(wanted, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where} is {_short(actual)}, expected a mapping"]
        problems = []
        for key, value in wanted.items():
            inner = f"{where}.{key}" if where else str(key)
            if key not in actual:
                problems.append(f"{inner} is missing")
            else:
                problems += subset_problems(value, actual[key], inner)
        return problems
    if wanted != actual:
        return [f"{where} is {_short(actual)}, expected {_short(wanted)}"]
    return []


def json_path(data: Any, path: str) -> Any:
    """The value at ``$.a.b[0]`` (or ``a.b.0``); ``None`` when a step is missing."""
    text = path.strip()
    text = text[1:] if text.startswith("$") else text
    parts = [p for p in text.replace("[", ".").replace("]", "").split(".") if p]
    for part in parts:
        if isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(data, list) and part.lstrip("-").isdigit():
            index = int(part)
            data = data[index] if -len(data) <= index < len(data) else None
        else:
            return None
    return data


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
