"""Task hooks (ARCHITECTURE §3 "Hooks"): ``hooks/pre_run`` and ``hooks/post_run``.

* ``hooks/<stage>.py`` defines ``run(ctx, task)`` (sync or ``async``), or a single
  :class:`Hook` subclass with ``run(self, ctx, task)``. ``ctx.context`` (alias ``ctx.state``)
  is the task's context, changed in place: ``pre_run`` changes what the agent sees,
  ``post_run`` already finds the task's output in it. A returned mapping is merged into it.
  ``ctx.task_dir``, ``ctx.workflow_root``, ``ctx.logger``, ``ctx.http`` work as for tools;
  ``task`` has ``name``, ``path``, ``config``. Sync hooks run in a worker thread.
* ``hooks/<stage>.sh`` runs like a shell tool (stripped environment, cwd = the task folder,
  process group killed on cancellation) with ``FOLPIPE_CONTEXT`` (the context as JSON;
  ``FOLPIPE_CONTEXT_FILE`` names a file holding it instead when it is larger than 100 kB),
  ``FOLPIPE_STAGE``, ``FOLPIPE_TASK_NAME``, ``FOLPIPE_TASK_PATH``, ``FOLPIPE_TASK_DIR`` and
  ``FOLPIPE_WORKFLOW_ROOT``. If its whole stdout is a JSON object, that object is merged into
  the context; any other output is logged. A non-zero exit fails the task.
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

from ..errors import HookError
from ..loader.code import exits_refused
from ..workflow.toolcontext import ToolContext
from .redact import redact_secrets
from .shell import run_script, sandbox_env

if TYPE_CHECKING:
    from ..workflow.tree import Task, Workflow

MAX_ENV_CONTEXT = 100_000


class Hook:
    """Base class for class-style hooks: subclass it and define ``run(self, ctx, task)``.

    ``run`` may be sync or ``async``; a returned mapping is merged into ``ctx.context``.
    """

    def run(self, ctx: Any, task: Any) -> Any:
        raise NotImplementedError("a Hook subclass must define run(self, ctx, task)")


class HookContext(ToolContext):
    """What a hook's ``run(ctx, task)`` receives: a ToolContext plus ``stage`` and ``state``."""

    def __init__(self, *, stage: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stage = stage

    @property
    def state(self) -> MutableMapping[str, Any]:
        """Alias of ``context`` (hooks written for the spec's original runner use it)."""
        return self.context


async def run_hook(
    stage: str,
    hook_file: str | Path,
    *,
    context: MutableMapping[str, Any],
    task: Task,
    workflow: Workflow | None = None,
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
) -> MutableMapping[str, Any]:
    """Run one hook; it may change ``context`` in place. Any failure raises HookError."""
    path = Path(hook_file)
    log = logger or logging.getLogger("prefect_folpipe.hooks")
    try:
        if path.suffix == ".py":
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
    digest = hashlib.sha256(str(path.absolute()).encode() + path.read_bytes()).hexdigest()
    spec = importlib.util.spec_from_file_location(f"_folpipe_hook_{digest[:16]}", path)
    if spec is None or spec.loader is None:
        raise HookError(f"cannot load hook {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        with exits_refused():
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
            returned = await entry(ctx, task)
        else:
            returned = await asyncio.to_thread(entry, ctx, task)
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
    payload = json.dumps(dict(context), default=str, ensure_ascii=False)
    extra = {
        "FOLPIPE_STAGE": stage,
        "FOLPIPE_TASK_NAME": task.name,
        "FOLPIPE_TASK_PATH": task.path,
        "FOLPIPE_TASK_DIR": str(Path(task.folder).absolute()),
        "FOLPIPE_WORKFLOW_ROOT": str(Path(workflow.root_dir if workflow else task.folder)),
    }
    with tempfile.TemporaryDirectory(prefix="folpipe-hook-") as scratch:
        if len(payload) > MAX_ENV_CONTEXT:
            context_file = Path(scratch) / "context.json"
            context_file.write_text(payload, encoding="utf-8")
            extra["FOLPIPE_CONTEXT_FILE"] = str(context_file)
        else:
            extra["FOLPIPE_CONTEXT"] = payload
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
    update = _json_object(output)
    if update is not None:
        context.update(update)
    elif output:
        logger.info("%s hook output: %s", stage, redact_secrets(output[-2000:]))


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a shell hook printed (its whole stdout), else None."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
