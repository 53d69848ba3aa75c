"""Approval gates at run time: who answers, and how a run waits without holding a worker.

Before a task with ``approval:`` runs, its gate finds the answer, in this order:

1. the **checkpointed answer** of the same gate (the same task, loop iteration, question and
   input context): a resumed run never asks again;
2. a **preset** (``folpipe run --approve key=value``, ``RunOptions.approvals``, test stubs);
3. in a flow run of a **deployment**, Prefect's ``suspend_flow_run(wait_for_input=...)``: the
   flow run is suspended with a typed form (built from ``approval.input``, described by the
   rendered prompt) and its process exits, so no worker is held. When someone answers in the
   UI (or the API), Prefect schedules the run again; it starts over, every task before the
   gate comes back from its checkpoint, and the gate reads the answer (the pause key is
   already spent, so Prefect hands the input back instead of suspending again);
4. a **terminal** (``RunOptions.ask``, set by ``folpipe run`` when stdin is a TTY);
5. otherwise the gate fails (FP530) and the task's ``on_failure`` applies.

The answer is checkpointed in the result store (``approvals/<key>.json``) and merged into the
context. ``approval.timeout`` bounds the wait: in a terminal the gate fails at once
(FP531), or takes ``on_timeout``; for a suspended run Prefect fails the flow run when the time
is up, and a retry of it fails the gate (FP531), so ``on_failure`` decides. With
``on_timeout``, the deployment's deadline automation (``folpipe deploy``) schedules the run
again at the deadline, and the gate takes the default, recorded as defaulted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from ... import telemetry
from ..._process.stored import DamagedEntry, load_stored, warn_damaged
from ...plan import cache_key
from ...plan.failures import ApprovalFailed, ApprovalTimedOut
from ...redaction import redact_secrets
from ...workflow.approval import input_fields, notify_names, parse_duration, render_prompt
from ...workflow.names import slug
from ...workflow.toolapproval import default_answer
from ...workflow.tree import Task
from ..checkpoints import StorageFiles
from ._events import run_page
from ._question import Asker, Question, checked_answer, timed_out
from ._tools import PassToolGates, no_answer

LOG = logging.getLogger("prefect_folpipe.compile")
DEFAULTED = "default at deadline"
"""Who answered a gate whose deadline passed with ``on_timeout`` declared."""
ANY_TASK = ""
"""Key of ``RunOptions.approvals`` whose answers apply to every gate."""


class ApprovalGates:
    """The gates of one run: answers from checkpoints, presets, Prefect or a terminal."""

    def __init__(
        self,
        storage: Any,
        keys: Any,
        *,
        presets: Mapping[str, Mapping[str, Any]] | None = None,
        ask: Asker | None = None,
        flow_run: Any = None,
    ) -> None:
        self.files = StorageFiles(storage) if storage is not None else None
        self.keys = keys
        """Gives ``identity(task)``, ``salt(task)`` and ``reach(task)`` (the run's
        ``PassRuntime``)."""
        self.presets = {name: dict(values) for name, values in (presets or {}).items()}
        self.ask = ask
        self.flow_run = flow_run
        """The top-level ``FlowRunContext`` (a deployment's run suspends there)."""
        self._terminal = asyncio.Lock()
        self.answers: list[dict[str, Any]] = []
        """Every gate answered in this run, for the record (``note``)."""
        self.listener: Callable[[str, dict[str, Any]], None] | None = None
        """Told ``(task path, record)`` of each answer (the run's tracker)."""

    async def answer(self, task: Task, context: Mapping[str, Any], scope: tuple[int, ...]) -> dict:
        """The answer of ``task``'s gate (raises ``ApprovalFailed`` / ``ApprovalTimedOut``, or
        Prefect's ``Pause`` when the run is suspended to wait for it)."""
        question = self.question(task, context, scope)
        with telemetry.approval_span(task.path, question.label) as span:
            key = self._answer_key(task, context, scope, question)
            target = task.path or "root"
            saved = await self.read(f"approvals/{key}.json", task.path)
            if isinstance(saved, dict) and isinstance(saved.get("answer"), dict):
                span.answered("checkpoint")
                self.note(target, "task", question, saved["answer"], "stored", saved)
                return dict(saved["answer"])
            answer, source = self._preset(question), "--approve"
            if answer is None:
                answer, source = await self.wait_for(question, key, pause_key(task, scope))
            span.answered(source)
            record = self.note(target, "task", question, answer, source)
            await self.write(f"approvals/{key}.json", {"task": task.path, **record}, task.path)
            return answer

    def tool_gates(
        self, task: Task, phase: str, scope: tuple[int, ...], context: Mapping[str, Any]
    ) -> PassToolGates:
        """The approver of one agent pass's tool calls."""
        return PassToolGates(self, task, phase, scope, context)

    def note(
        self,
        target: str,
        kind: str,
        question: Question,
        answer: Mapping[str, Any],
        source: str,
        saved: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record who answered what and when (a stored answer keeps who first gave it)."""
        first = saved or {}
        record = {
            "target": target,
            "kind": kind,
            "question": question.prompt,
            "answer": dict(answer),
            "source": source if saved is None else "stored",
            "answered_by": first.get("answered_by", source),
            "answered_at": first.get("answered_at") or datetime.now(UTC).isoformat(),
        }
        self.answers.append(record)
        if self.listener is not None:
            self.listener(question.task_path, record)
        return record

    @staticmethod
    def question(task: Task, context: Mapping[str, Any], scope: tuple[int, ...]) -> Question:
        approval = task.config.approval
        assert approval is not None
        label = (task.path or "root") + "".join(f"[{i}]" for i in scope)
        fields = input_fields(approval.input)
        timeout = parse_duration(approval.timeout)
        return Question(
            task.path,
            label,
            redact_secrets(render_prompt(approval.prompt, context)),
            fields,
            timeout,
            default_answer(fields, approval.on_timeout, timeout),
            notify=notify_names(approval.notify),
        )

    def _answer_key(
        self, task: Task, context: Mapping[str, Any], scope: tuple[int, ...], question: Question
    ) -> str:
        asked = json.dumps([question.prompt, {k: list(v) if isinstance(v, tuple) else v
                                              for k, v in question.fields.items()}])  # fmt: skip
        reach = self.keys.reach(task)  # as far as the task's checkpoints reach
        salt = f"{self.keys.salt(task)}{reach}|{hashlib.sha256(asked.encode()).hexdigest()}"
        identity = self.keys.identity(task)
        return cache_key(task, identity, context, iteration=scope, phase="approval", salt=salt)

    def _preset(self, question: Question) -> dict[str, Any] | None:
        name = question.task_path.rsplit("/", 1)[-1]
        given = {
            **self.presets.get(ANY_TASK, {}),
            **self.presets.get(name, {}),
            **self.presets.get(question.task_path, {}),
        }
        relevant = {key: value for key, value in given.items() if key in question.fields}
        if not relevant:
            return None
        return checked_answer(question, relevant, "--approve")

    async def wait_for(
        self, question: Question, key: str, pause: str
    ) -> tuple[dict[str, Any], str]:
        """The answer of a person (Prefect UI, terminal), or the declared default when the
        deadline passes, and who gave it."""
        if self._deployment_run():
            from ._suspend import suspend_for_answer

            try:
                return await suspend_for_answer(self, question, key, pause), "Prefect UI"
            except ApprovalTimedOut:
                if question.default is None:
                    raise
                return dict(question.default), DEFAULTED
        if self.ask is not None:
            if question.notify:
                LOG.warning("%s", self.notice(question))
            return await self._ask_terminal(question)
        if question.tool is not None:
            raise no_answer(question)
        raise ApprovalFailed(
            f"task {question.label!r} waits for approval ({question.prompt!r}) but nobody can "
            "answer: no terminal, no deployment, no --approve",
            hint="answer ahead with `folpipe run --approve key=value` (CI), run `folpipe run` "
            "in a terminal, or run the workflow from a deployment to answer in the Prefect UI",
        )

    def notice(self, question: Question) -> str:
        """The message of a gate that starts waiting (``approval.notify``): the workflow, the
        task or tool, the question and the run's page in the UI."""
        flow_run = getattr(self.flow_run, "flow_run", None)
        link = "" if flow_run is None else f" · {run_page(flow_run) or flow_run.id}"
        return f"workflow {self.workflow_name()!r} waits: {question.describe()}{link}"

    def workflow_name(self) -> str:
        return str(getattr(getattr(self.keys, "workflow", None), "name", "?"))

    def _deployment_run(self) -> bool:
        flow_run = getattr(self.flow_run, "flow_run", None)
        return flow_run is not None and flow_run.deployment_id is not None

    async def _ask_terminal(self, question: Question) -> tuple[dict[str, Any], str]:
        assert self.ask is not None
        async with self._terminal:  # one question on the terminal at a time
            try:
                raw = await asyncio.wait_for(_in_thread(self.ask, question), question.timeout)
            except TimeoutError:
                if question.default is None:
                    raise timed_out(question) from None
                LOG.warning(
                    "%s: no answer within %gs, continuing with the declared default %s",
                    question.describe(),
                    question.timeout,
                    json.dumps(dict(question.default), default=str),
                )
                return dict(question.default), DEFAULTED
        return checked_answer(question, raw, "the terminal"), "terminal"

    async def read(self, key: str, task: str | None = None) -> Any:
        """The stored value at ``key`` (signed, bound to the key, which holds the task's
        checkpoint key and the question's hash), or ``None``: missing or failing the check."""
        if self.files is None:
            return None
        data = await self.files.read(key, task)
        try:
            return load_stored(data) if data else None
        except DamagedEntry as exc:
            warn_damaged(LOG, f"stored approval answer {key}", exc, "the gate asks again")
            return None

    async def write(self, key: str, value: Any, task: str | None = None) -> None:
        if self.files is None:
            return
        try:
            await self.files.write(key, json.dumps(value, default=str).encode(), task)
        except Exception as exc:  # the run goes on; a resume would ask again
            LOG.warning("approval answer %s not checkpointed: %s", key, exc)


def pause_key(task: Task, scope: tuple[int, ...]) -> str:
    """Prefect's pause key of a gate: stable for the flow run (path and loop iteration)."""
    return f"folpipe-{slug(task.path or 'root', limit=80)}-{'-'.join(map(str, scope)) or '0'}"


async def _in_thread(ask: Asker, question: Question) -> Mapping[str, Any]:
    """Run a blocking asker in a daemon thread: a timed-out question must not keep the
    process alive waiting for a line that never comes."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Mapping[str, Any]] = loop.create_future()

    def settle(action: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the run ended (timed out) meanwhile
            loop.call_soon_threadsafe(lambda: None if done.done() else action())

    def work() -> None:
        try:
            value = ask(question)
        except BaseException as exc:  # delivered to the waiting task
            settle(partial(done.set_exception, exc))
        else:
            settle(partial(done.set_result, value))

    threading.Thread(target=work, name="folpipe-approval", daemon=True).start()
    return await done
