"""Provider registry and pool: built-ins, module: providers, entry points, override, call guard."""

from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path

import pytest
from builders import make_task, scripted_provider, workflow_around

from prefect_folpipe.errors import ConfigError
from prefect_folpipe.providers import ModelRequest, UserMessage
from prefect_folpipe.providers.classes import resolve_provider_class
from prefect_folpipe.providers.registry import (
    NO_PROVIDER_MESSAGE,
    ProviderOverride,
    ProviderPool,
    canonical_type,
    override_from_env,
)
from prefect_folpipe.providers.scripted import ScriptedProvider
from prefect_folpipe.workflow.config import ProviderConfig
from prefect_folpipe.workflow.tree import ResolvedProvider

CUSTOM_MODULE = """
from prefect_folpipe._messages import ModelResponse


class EchoModelProvider:
    name = "echo_model"
    supports_tools = False

    def __init__(self, model=None, custom_param=None, **extra):
        self.model = model
        self.custom_param = custom_param
        self.extra = extra

    async def complete(self, request):
        return ModelResponse(text=f"{self.model}:{self.custom_param}:{sorted(self.extra)}")

    async def aclose(self):
        pass
"""


def ask(task) -> ModelRequest:
    return ModelRequest(
        system="s", messages=(UserMessage("{}"),), task_path=task.path, task_name=task.name
    )


@pytest.fixture
def custom_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "pkgs"
    package.mkdir()
    (package / "my_folpipe_provider.py").write_text(CUSTOM_MODULE)
    (package / "two_providers.py").write_text(
        CUSTOM_MODULE + "\n\nclass Other(EchoModelProvider):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(package))
    yield "my_folpipe_provider"
    for name in ("my_folpipe_provider", "two_providers"):
        sys.modules.pop(name, None)


def replies(tmp_path: Path, text: str = "default: hello\n") -> Path:
    file = tmp_path / "replies.yaml"
    file.write_text(text)
    return file


async def test_builtin_scripted_block_reads_replies_relative_to_the_workflow_root(
    tmp_path: Path,
) -> None:
    replies(tmp_path, "tasks: {child: [from-block]}\n")
    task = make_task("child", folder=tmp_path / "sub", provider=scripted_provider("replies.yaml"))
    pool = ProviderPool(workflow_around(task, tmp_path))
    provider = pool.for_task(task)
    assert isinstance(provider, ScriptedProvider)
    assert (await provider.complete(ask(task))).text == "from-block"
    assert pool.for_task(task) is provider
    await pool.aclose()


def test_no_provider_configured_is_the_exact_config_error(tmp_path: Path) -> None:
    task = make_task("lonely", folder=tmp_path)
    with pytest.raises(ConfigError) as info:
        ProviderPool(workflow_around(task, tmp_path)).for_task(task)
    assert str(info.value) == NO_PROVIDER_MESSAGE
    assert info.value.code == "FP300"


async def test_override_replaces_every_tasks_provider(tmp_path: Path) -> None:
    file = replies(tmp_path, "tasks: {a: [alpha]}\ndefault: other\n")
    claude = ResolvedProvider("claude", "anthropic", ProviderConfig(model="claude-x"))
    a = make_task("a", folder=tmp_path / "a", provider=claude)
    b = make_task("b", folder=tmp_path / "b", provider=None)
    pool = ProviderPool(workflow_around(a, tmp_path), ProviderOverride("scripted", file))
    pa, pb = pool.for_task(a), pool.for_task(b)
    assert pa is pb and isinstance(pa, ScriptedProvider)
    assert (await pa.complete(ask(a))).text == "alpha"
    assert (await pb.complete(ask(b))).text == "other"


async def test_override_without_replies_uses_the_workflows_scripted_block(tmp_path: Path) -> None:
    replies(tmp_path, "default: shipped\n")
    task = make_task("t", folder=tmp_path / "t", provider=None)
    workflow = workflow_around(
        task, tmp_path, providers={"default": "scripted", "scripted": {"replies": "replies.yaml"}}
    )
    provider = ProviderPool(workflow, ProviderOverride("scripted")).for_task(task)
    assert (await provider.complete(ask(task))).text == "shipped"


def test_override_from_env() -> None:
    assert override_from_env({}) is None
    assert override_from_env({"FOLPIPE_PROVIDER": "scripted", "FOLPIPE_REPLIES": "r.yaml"}) == (
        ProviderOverride("scripted", "r.yaml")
    )
    assert override_from_env({"FOLPIPE_REPLIES": "r.yaml"}) == ProviderOverride(
        "scripted", "r.yaml"
    )


async def test_module_provider_gets_the_blocks_settings_including_extra_keys(
    tmp_path: Path, custom_module: str
) -> None:
    config = ProviderConfig.model_validate(
        {"module": custom_module, "model": "my-model-v1", "custom_param": "value", "zeta": 1}
    )
    task = make_task("t", folder=tmp_path, provider=ResolvedProvider("my_custom", "custom", config))
    provider = ProviderPool(workflow_around(task, tmp_path)).for_task(task)
    assert (await provider.complete(ask(task))).text == "my-model-v1:value:['zeta']"


def test_module_with_class_name_and_ambiguous_module(custom_module: str) -> None:
    cls = resolve_provider_class(None, "two_providers:Other")
    assert cls.__name__ == "Other"
    with pytest.raises(ConfigError) as info:
        resolve_provider_class(None, "two_providers")
    assert info.value.code == "FP303" and "EchoModelProvider, Other" in str(info.value)
    with pytest.raises(ConfigError) as info:
        resolve_provider_class(None, "two_providers:Missing")
    assert info.value.code == "FP303"


def test_unimportable_module_and_unknown_type_are_config_errors() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_provider_class(None, "no_such_pkg_xyz.provider")
    assert info.value.code == "FP302"
    with pytest.raises(ConfigError) as info:
        resolve_provider_class("scriptd")
    assert info.value.code == "FP301" and "scripted" in (info.value.hint or "")


def test_aliases_and_legacy_module_names_map_to_builtins() -> None:
    assert canonical_type("claude") == "anthropic"
    assert canonical_type("agentflow.providers.claude") == "anthropic"
    assert resolve_provider_class(None, "agentflow.providers.scripted") is ScriptedProvider
    assert resolve_provider_class(None, "prefect_folpipe.providers.scripted") is ScriptedProvider
    assert resolve_provider_class("x", "prefect_folpipe.providers.scripted:ScriptedProvider") is (
        ScriptedProvider
    )


def test_missing_builtin_module_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_folpipe.providers import classes

    monkeypatch.setitem(classes.MODULES, "ghost", "prefect_folpipe.providers.ghost_adapter")
    with pytest.raises(ConfigError) as info:
        resolve_provider_class("ghost")
    assert info.value.code == "FP302" and "ghost" in str(info.value)


def test_entry_point_providers_are_found(
    tmp_path: Path, custom_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "pkgs" / "my_folpipe_provider-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-folpipe-provider\n")
    (dist / "entry_points.txt").write_text(
        "[prefect_folpipe.providers]\nechomodel = my_folpipe_provider:EchoModelProvider\n"
    )
    importlib.invalidate_caches()
    cls = resolve_provider_class("echomodel")
    assert cls.__name__ == "EchoModelProvider"
    # how the loader resolves a block `mine: {type: echomodel, model: m}`
    block = ProviderConfig(type="echomodel", model="m")
    task = make_task("t", folder=tmp_path, provider=ResolvedProvider("mine", "custom", block))
    provider = ProviderPool(workflow_around(task, tmp_path)).for_task(task)
    assert type(provider).__name__ == "EchoModelProvider" and provider.model == "m"


async def test_call_guard_wraps_every_model_call(tmp_path: Path) -> None:
    replies(tmp_path)
    task = make_task("t", folder=tmp_path / "t", provider=scripted_provider())
    entered: list[str] = []

    @contextlib.asynccontextmanager
    async def guard(t):
        entered.append(f"in:{t.path}")
        yield
        entered.append(f"out:{t.path}")

    pool = ProviderPool(workflow_around(task, tmp_path), call_guard=guard)
    provider = pool.for_task(task)
    assert provider.name == "scripted"
    assert (await provider.complete(ask(task))).text == "hello"
    assert entered == ["in:t", "out:t"]


def test_pool_keeps_the_seams_it_does_not_use_yet(tmp_path: Path) -> None:
    task = make_task("t", folder=tmp_path)

    def resolver(name: str) -> str:
        return name

    pool = ProviderPool(workflow_around(task, tmp_path), secret_resolver=resolver, record=tmp_path)
    assert pool.secret_resolver is resolver and pool.record == tmp_path


async def test_pool_and_scripted_provider_pickle(tmp_path: Path) -> None:
    import pickle

    replies(tmp_path, "default: [one, two]\n")
    task = make_task("t", folder=tmp_path / "t", provider=scripted_provider())
    pool = ProviderPool(workflow_around(task, tmp_path))
    provider = pool.for_task(task)
    assert (await provider.complete(ask(task))).text == "one"
    copied = pickle.loads(pickle.dumps(provider))
    assert (await copied.complete(ask(task))).text == "two"
    fresh = pickle.loads(pickle.dumps(pool))
    assert (await fresh.for_task(task).complete(ask(task))).text == "one"
