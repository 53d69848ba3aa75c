"""Task hooks (docs/tools.md, "Hooks"): ``hooks/pre_run`` and ``hooks/post_run``.

* ``hooks/<stage>.py`` defines ``run(ctx, task)`` (sync or ``async``), or a single
  :class:`Hook` subclass with ``run(self, ctx, task)``. ``ctx.context`` (alias ``ctx.state``)
  is the task's context, changed in place: ``pre_run`` changes what the agent sees,
  ``post_run`` already finds the task's output in it. A returned mapping is merged into it.
  ``ctx.task_dir``, ``ctx.workflow_root``, ``ctx.logger``, ``ctx.http`` work as for tools;
  ``task`` has ``name``, ``path``, ``config``. Sync hooks run in a worker thread.
* ``hooks/<stage>.sh`` runs like a shell tool (stripped environment, cwd = the task folder,
  process group killed on cancellation) with the context variables of ``shell.context_env``
  (``FOLPIPE_CONTEXT`` when at most 100 kB, always ``FOLPIPE_CONTEXT_FILE``, the task's name,
  path, folder and workflow root; ``AGENTFLOW_CONTEXT``, ``AGENTFLOW_CONTEXT_FILE`` and
  ``AGENTFLOW_TASK_NAME`` are folpipe 0.1.8's names for them) plus ``FOLPIPE_STAGE``. If its
  whole stdout is a JSON object, that object is merged into the context; any other output is
  logged. A non-zero exit fails the task.
* Hooks have no time limit of their own: the task's ``settings.timeout`` bounds them.
* Any failure raises ``errors.HookError`` naming the hook file (the task fails).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import json
import logging
import sys
import tempfile
import types
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._process.files import read_regular
from ..authoring import Hook, ToolContext
from ..authoring.agentflow import agentflow_imports, with_agentflow
from ..errors import HookError
from ..loader.tools import exits_refused
from ..redaction import redact_secrets
from ..workflow.config import HttpHook
from ..workflow.printed import printed_to
from ..workflow.tree import ToolSpec
from .shell import context_env, json_object, run_script, sandbox_env

if TYPE_CHECKING:
    from ..workflow.tree import Task, Workflow


class HookContext(ToolContext):
    """What a hook's ``run(ctx, task)`` receives: a ToolContext (``ctx.state`` included) plus
    ``stage``."""

    def __init__(self, *, stage: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stage = stage


async def run_hook(
    stage: str,
    hook_file: str | Path | HttpHook,
    *,
    context: MutableMapping[str, Any],
    task: Task,
    workflow: Workflow | None = None,
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
) -> MutableMapping[str, Any]:
    """Run one hook (a file, or task.yaml's http hook); it may change ``context`` in place.
    Any failure raises HookError."""
    log = logger or logging.getLogger("prefect_folpipe.hooks")
    if isinstance(hook_file, HttpHook):
        await _run_http_hook(stage, hook_file, context, task, workflow, log)
        return context
    path = Path(hook_file)
    try:
        if path.suffix == ".py":
            with printed_to(log, f"{stage} hook"):  # its print()s: the task's log, masked
                await _run_python_hook(stage, path, context, task, workflow, log)
        elif path.suffix == ".sh":
            await _run_shell_hook(stage, path, context, task, workflow, log)
        else:
            raise HookError(f"{stage} hook {path}: unsupported file type (use .py or .sh)")
    except HookError:
        raise
    except (Exception, SystemExit) as exc:  # a hook's exit() fails the task, not the process
        message = redact_secrets(f"{stage} hook {path} failed: {type(exc).__name__}: {exc}")
        raise HookError(message) from None  # the cause's traceback would carry it unmasked
    return context


def _load_hook_module(path: Path) -> types.ModuleType:
    """Execute a hook file as a fresh module (edits apply on the next run)."""
    digest = hashlib.sha256(str(path.absolute()).encode() + read_regular(path)).hexdigest()
    spec = importlib.util.spec_from_file_location(f"_folpipe_hook_{digest[:16]}", path)
    if spec is None or spec.loader is None:
        raise HookError(f"cannot load hook {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        with agentflow_imports(), exits_refused():  # 0.1.8 hooks import agentflow
            spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
    return module


def _hook_callable(module: types.ModuleType, path: Path, stage: str) -> Callable[..., Any]:
    """``run`` of the module, else ``run`` of its single Hook subclass."""
    function = getattr(module, "run", None)
    if callable(function):
        return function
    classes = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Hook)
        and value is not Hook
        and value.__module__ == module.__name__
    ]
    if len(classes) == 1:
        return classes[0]().run
    found = "several Hook subclasses" if classes else "neither run(ctx, task) nor a Hook subclass"
    raise HookError(f"{stage} hook {path} defines {found}")


async def _run_python_hook(
    stage: str,
    path: Path,
    context: MutableMapping[str, Any],
    task: Task,
    workflow: Workflow | None,
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> None:
    entry = _hook_callable(_load_hook_module(path), path, stage)
    ctx = HookContext(
        stage=stage,
        context=context,
        task_dir=task.folder,
        workflow_root=workflow.root_dir if workflow else task.folder,
        logger=logger,
        task=task,
        workflow=workflow,
    )
    try:
        if inspect.iscoroutinefunction(entry):
            with agentflow_imports():
                returned = await entry(ctx, task)
        else:
            returned = await asyncio.to_thread(with_agentflow(entry), ctx, task)
            if inspect.isawaitable(returned):
                returned = await returned
    finally:
        await ctx.aclose()
    if isinstance(returned, Mapping):
        context.update(returned)


async def _run_shell_hook(
    stage: str,
    path: Path,
    context: MutableMapping[str, Any],
    task: Task,
    workflow: Workflow | None,
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> None:
    with tempfile.TemporaryDirectory(prefix="folpipe-hook-") as scratch:
        extra = context_env(
            context,
            scratch,
            task_name=task.name,
            task_path=task.path,
            task_dir=task.folder,
            workflow_root=workflow.root_dir if workflow else task.folder,
        )
        extra["FOLPIPE_STAGE"] = stage
        extra["FOLPIPE_HOOK_FILE"] = str(path.absolute())
        executable = path.stat().st_mode & 0o111
        script = 'exec "$FOLPIPE_HOOK_FILE"' if executable else '. "$FOLPIPE_HOOK_FILE"'
        result = await run_script(script, cwd=task.folder, env=sandbox_env(extra=extra))
    output = result.output.strip()
    if result.returncode != 0:
        raise HookError(
            f"{stage} hook {path} exited with status {result.returncode}: "
            + redact_secrets(output[-2000:])
        )
    update = json_object(output)
    if update is not None:
        context.update(update)
    elif output:
        logger.info("%s hook output: %s", stage, redact_secrets(output[-2000:]))


async def _run_http_hook(
    stage: str,
    hook: HttpHook,
    context: MutableMapping[str, Any],
    task: Task,
    workflow: Workflow | None,
    logger: logging.Logger | logging.LoggerAdapter[Any],
) -> None:
    """POST the task's context as JSON (folpipe 0.1.8's http hook) through the http tool's
    runner, so its egress rules apply; any answer but 2xx fails the task."""
    from .http import run_http_tool  # only workflows with http hooks pay for httpx

    metadata: dict[str, Any] = {
        "method": hook.method.upper(),
        "url": hook.url,
        "timeout": hook.timeout,
    }
    if hook.auth_env:
        metadata["headers"] = {"Authorization": f"Bearer ${{{hook.auth_env}}}"}
        metadata["env"] = [hook.auth_env]
    spec = ToolSpec(
        name=f"{stage}_hook",
        kind="http",
        description=f"{stage} http hook",
        parameters={"type": "object"},
        source_file=str(task.source_file or task.folder),
        metadata=metadata,
    )
    payload = json.loads(json.dumps(dict(context), default=str))
    ctx = ToolContext(
        context=context,
        task_dir=task.folder,
        workflow_root=workflow.root_dir if workflow else task.folder,
        logger=logger,
        task=task,
        workflow=workflow,
    )
    try:
        async with asyncio.timeout(hook.timeout):
            await run_http_tool(spec, payload, ctx)
    except TimeoutError:
        raise HookError(f"{stage} http hook {hook.url} timed out after {hook.timeout:g}s") from None
    except Exception as exc:
        message = redact_secrets(f"{stage} http hook {hook.url} failed: {exc}")
        raise HookError(message) from None
    finally:
        await ctx.aclose()
    logger.info("%s http hook %s answered", stage, hook.url)
