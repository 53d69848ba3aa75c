"""Hooks: discovery of hooks/pre_run|post_run (.py or .sh) and running them."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from prefect_folpipe.errors import HookError, Severity
from prefect_folpipe.loader.hooks import check_hooks, discover_hooks
from prefect_folpipe.tools.hooks import run_hook
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow


def test_discover_hooks_py_and_sh(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre_run.py").write_text("def run(ctx, task):\n    pass\n")
    (hooks / "post_run.sh").write_text("echo done\n")
    (hooks / "notes.txt").write_text("not a hook")
    found = discover_hooks(tmp_path)
    assert found == {"pre_run": hooks / "pre_run.py", "post_run": hooks / "post_run.sh"}
    assert all(path.is_absolute() for path in found.values())


def test_python_hook_wins_over_shell(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre_run.sh").write_text("echo sh\n")
    (hooks / "pre_run.py").write_text("def run(ctx, task):\n    pass\n")
    assert discover_hooks(tmp_path) == {"pre_run": hooks / "pre_run.py"}


def test_no_hooks(tmp_path: Path) -> None:
    assert discover_hooks(tmp_path) == {}


# --------------------------------------------------------------------------- running hooks


def make_task(folder: Path, name: str = "review", path: str = "pipeline/review") -> Task:
    return Task(
        name=name,
        path=path,
        folder=folder,
        config=TaskConfig(description="Review the CV"),
        settings=EffectiveSettings(),
    )


def write_hook(folder: Path, file: str, text: str) -> Path:
    hooks = folder / "hooks"
    hooks.mkdir(exist_ok=True)
    path = hooks / file
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


async def test_python_function_hook_mutates_context(tmp_path: Path) -> None:
    hook = write_hook(
        tmp_path,
        "pre_run.py",
        """
        def run(ctx, task):
            ctx.context["seen_name"] = task.name
            ctx.context["seen_path"] = task.path
            ctx.context["seen_description"] = task.config.description
            ctx.state["via_state"] = ctx.get("start") + 1
            ctx.context["dirs"] = [str(ctx.task_dir), str(ctx.workflow_root)]
            ctx.logger.info("pre_run ran")
        """,
    )
    context = {"start": 1}
    task = make_task(tmp_path)
    workflow = Workflow(root=task, root_dir=tmp_path.parent, name="wf")
    returned = await run_hook(
        "pre_run",
        hook,
        context=context,
        task=task,
        workflow=workflow,
        logger=logging.getLogger("test"),
    )
    assert returned is context
    assert context["seen_name"] == "review" and context["seen_path"] == "pipeline/review"
    assert context["seen_description"] == "Review the CV"
    assert context["via_state"] == 2
    assert context["dirs"] == [str(tmp_path.absolute()), str(tmp_path.parent.absolute())]


async def test_hook_subclass_async_and_returned_mapping(tmp_path: Path) -> None:
    hook = write_hook(
        tmp_path,
        "post_run.py",
        """
        import asyncio

        from prefect_folpipe import Hook


        class Summarise(Hook):
            async def run(self, ctx, task):
                await asyncio.sleep(0)
                return {"summary": f"{task.name}: approved={ctx.context['approved']}"}
        """,
    )
    context = {"approved": True}
    await run_hook(
        "post_run", hook, context=context, task=make_task(tmp_path), workflow=None, logger=None
    )
    assert context["summary"] == "review: approved=True"


async def test_async_function_hook(tmp_path: Path) -> None:
    hook = write_hook(
        tmp_path,
        "pre_run.py",
        """
        async def run(ctx, task):
            ctx.context["async"] = True
        """,
    )
    context: dict = {}
    await run_hook(
        "pre_run", hook, context=context, task=make_task(tmp_path), workflow=None, logger=None
    )
    assert context == {"async": True}


async def test_hook_exception_is_a_hook_error_naming_the_file(tmp_path: Path) -> None:
    hook = write_hook(
        tmp_path,
        "pre_run.py",
        """
        def run(ctx, task):
            raise ValueError("missing credentials")
        """,
    )
    with pytest.raises(HookError) as caught:
        await run_hook(
            "pre_run", hook, context={}, task=make_task(tmp_path), workflow=None, logger=None
        )
    message = str(caught.value)
    assert "pre_run hook" in message and str(hook) in message
    assert "ValueError: missing credentials" in message
    assert caught.value.code == "FP314"


async def test_hook_import_error_and_missing_entry(tmp_path: Path) -> None:
    broken = write_hook(tmp_path, "pre_run.py", "import no_such_module_for_hooks\n")
    with pytest.raises(HookError, match="ModuleNotFoundError"):
        await run_hook(
            "pre_run", broken, context={}, task=make_task(tmp_path), workflow=None, logger=None
        )
    empty = write_hook(tmp_path, "post_run.py", "VALUE = 1\n")
    with pytest.raises(HookError, match="neither run"):
        await run_hook(
            "post_run", empty, context={}, task=make_task(tmp_path), workflow=None, logger=None
        )


async def test_shell_hook_gets_context_and_may_print_an_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-should-not-leak")
    hook = write_hook(
        tmp_path,
        "post_run.sh",
        """
        test -z "$ANTHROPIC_API_KEY" || exit 9
        test "$(pwd)" = "$FOLPIPE_TASK_DIR" || exit 8
        value=$(printf '%s' "$FOLPIPE_CONTEXT" | sed -e 's/.*"score": \\([0-9]*\\).*/\\1/')
        printf '{"stage": "%s", ' "$FOLPIPE_STAGE"
        printf '"task": "%s", "double": %d}' "$FOLPIPE_TASK_PATH" $((value * 2))
        """,
    )
    context = {"score": 21}
    await run_hook(
        "post_run", hook, context=context, task=make_task(tmp_path), workflow=None, logger=None
    )
    assert context == {"score": 21, "stage": "post_run", "task": "pipeline/review", "double": 42}


async def test_shell_hook_plain_output_is_logged_and_failure_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ok = write_hook(tmp_path, "pre_run.sh", "echo preparing\n")
    context = {"a": 1}
    with caplog.at_level(logging.INFO, logger="prefect_folpipe.hooks"):
        await run_hook(
            "pre_run", ok, context=context, task=make_task(tmp_path), workflow=None, logger=None
        )
    assert context == {"a": 1}
    assert "preparing" in caplog.text
    bad = write_hook(tmp_path, "post_run.sh", "echo 'disk full' >&2\nexit 2\n")
    with pytest.raises(HookError, match="exited with status 2: disk full"):
        await run_hook(
            "post_run", bad, context={}, task=make_task(tmp_path), workflow=None, logger=None
        )


async def test_executable_shell_hook_with_shebang(tmp_path: Path) -> None:
    hook = write_hook(tmp_path, "pre_run.sh", "#!/bin/sh\necho '{\"ran\": true}'\n")
    hook.chmod(0o755)
    context: dict = {}
    await run_hook(
        "pre_run", hook, context=context, task=make_task(tmp_path), workflow=None, logger=None
    )
    assert context == {"ran": True}


async def test_large_context_goes_through_a_file(tmp_path: Path) -> None:
    hook = write_hook(
        tmp_path,
        "pre_run.sh",
        'test -z "$FOLPIPE_CONTEXT" && wc -c < "$FOLPIPE_CONTEXT_FILE" > size.txt\n',
    )
    await run_hook(
        "pre_run",
        hook,
        context={"blob": "x" * 200_000},
        task=make_task(tmp_path),
        workflow=None,
        logger=None,
    )
    assert int((tmp_path / "size.txt").read_text()) > 200_000


async def test_unsupported_hook_file(tmp_path: Path) -> None:
    hook = write_hook(tmp_path, "pre_run.rb", "puts 1\n")
    with pytest.raises(HookError, match="unsupported"):
        await run_hook(
            "pre_run", hook, context={}, task=make_task(tmp_path), workflow=None, logger=None
        )


# --------------------------------------------------------------------------- static checks


def test_check_hooks_finds_author_mistakes(tmp_path: Path) -> None:
    write_hook(tmp_path, "pre_run.py", "def run(ctx, task):\n    return (\n")
    write_hook(tmp_path, "pre_run.sh", "echo hi\n")
    write_hook(tmp_path, "post_run.py", "VALUE = 1\n")
    write_hook(tmp_path, "post-run.sh", "echo typo\n")
    write_hook(tmp_path, "_helpers.py", "X = 1\n")
    found = [
        (d.code, Path(d.file or "").name, d.line, d.severity)
        for d in check_hooks(tmp_path, owner="t")
    ]
    assert found == [
        ("FP226", "pre_run.sh", None, Severity.WARNING),
        ("FP227", "post-run.sh", None, Severity.WARNING),
        ("FP228", "post_run.py", None, Severity.ERROR),
        ("FP225", "pre_run.py", 2, Severity.ERROR),
    ]
    typo = next(d for d in check_hooks(tmp_path, owner="t") if d.code == "FP227")
    assert "post_run.sh" in (typo.hint or "")


@pytest.mark.parametrize(
    "source",
    [
        "def run(ctx, task):\n    pass\n",
        "async def run(ctx, task):\n    pass\n",
        "from prefect_folpipe import Hook\n\nclass H(Hook):\n    def run(self, ctx, task):\n"
        "        pass\n",
        "from shared_hooks import run\n",
        "run = print\n",
    ],
)
def test_check_hooks_accepts_valid_hooks(tmp_path: Path, source: str) -> None:
    write_hook(tmp_path, "pre_run.py", source)
    assert check_hooks(tmp_path, owner="t") == []


def test_check_hooks_without_hooks_folder(tmp_path: Path) -> None:
    assert check_hooks(tmp_path, owner="t") == []
