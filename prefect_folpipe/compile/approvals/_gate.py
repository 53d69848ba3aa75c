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
(FP531); for a suspended run Prefect fails the flow run when the time is up, and a retry of
it fails the gate (FP531), so ``on_failure`` decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ... import telemetry
from ...plan import cache_key
from ...plan.failures import ApprovalFailed
from ...redaction import redact_secrets
from ...workflow.approval import input_fields, parse_duration, render_prompt
from ...workflow.names import slug
from ...workflow.stored import DamagedEntry, load_stored, warn_damaged
from ...workflow.tree import Task
from ..checkpoints import StorageFiles
from ._question import Asker, Question, checked_answer, timed_out

LOG = logging.getLogger("prefect_folpipe.compile")
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

    async def answer(self, task: Task, context: Mapping[str, Any], scope: tuple[int, ...]) -> dict:
        """The answer of ``task``'s gate (raises ``ApprovalFailed`` / ``ApprovalTimedOut``, or
        Prefect's ``Pause`` when the run is suspended to wait for it)."""
        question = self.question(task, context, scope)
        with telemetry.approval_span(task.path, question.label) as span:
            key = self._answer_key(task, context, scope, question)
            saved = await self.read(f"approvals/{key}.json", task.path)
            if isinstance(saved, dict) and isinstance(saved.get("answer"), dict):
                span.answered("checkpoint")
                return dict(saved["answer"])
            answer, source = self._preset(question), "preset"
            if answer is None:
                answer, source = await self._wait(task, question, key, scope), "asked"
            span.answered(source)
            record = {"task": task.path, "answer": answer}
            await self.write(f"approvals/{key}.json", record, task.path)
            return answer

    @staticmethod
    def question(task: Task, context: Mapping[str, Any], scope: tuple[int, ...]) -> Question:
        approval = task.config.approval
        assert approval is not None
        label = (task.path or "root") + "".join(f"[{i}]" for i in scope)
        return Question(
            task.path,
            label,
            redact_secrets(render_prompt(approval.prompt, context)),
            input_fields(approval.input),
            parse_duration(approval.timeout),
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

    async def _wait(
        self, task: Task, question: Question, key: str, scope: tuple[int, ...]
    ) -> dict[str, Any]:
        if self._deployment_run():
            from ._suspend import suspend_for_answer

            return await suspend_for_answer(self, question, key, pause_key(task, scope))
        if self.ask is not None:
            return await self._ask_terminal(question)
        raise ApprovalFailed(
            f"task {question.label!r} waits for approval ({question.prompt!r}) but nobody can "
            "answer: no terminal, no deployment, no --approve",
            hint="answer ahead with `folpipe run --approve key=value` (CI), run `folpipe run` "
            "in a terminal, or run the workflow from a deployment to answer in the Prefect UI",
        )

    def _deployment_run(self) -> bool:
        flow_run = getattr(self.flow_run, "flow_run", None)
        return flow_run is not None and flow_run.deployment_id is not None

    async def _ask_terminal(self, question: Question) -> dict[str, Any]:
        assert self.ask is not None
        async with self._terminal:  # one question on the terminal at a time
            try:
                raw = await asyncio.wait_for(_in_thread(self.ask, question), question.timeout)
            except TimeoutError:
                raise timed_out(question) from None
        return checked_answer(question, raw, "the terminal")

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
