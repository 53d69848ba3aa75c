"""What a run's leaves share, and how another process rebuilds it (Prefect-free).

``RunSpec`` is the plain, picklable description of a run's runtime: the workflow folder, the
provider override, the cassette to record, the artifact level and, when the run uses Dask, the
handle of its services actor. ``ModelServices`` is the runtime itself: the provider pool (with
the Secret-block resolver, the call guard for rate limits, the cassette recorder) and the
budget ledger, one per run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..agent.budget import BudgetLedger
from ..agent.loop import CallLedger
from ..plan import CheckpointScope
from ..providers.base import Provider
from ..providers.registry import (
    ProviderOverride,
    ProviderPool,
    canonical_type,
    checkpoint_salt,
    override_from_env,
)
from ..workflow.tree import Task, Workflow
from .infra import make_call_guard, prefect_secret_resolver
from .options import ArtifactLevel, RunOptions


@dataclass(frozen=True)
class RunSpec:
    """Everything a process needs to rebuild a run's runtime (plain data, picklable)."""

    key: str
    """Identifies the run (each process caches what it rebuilt under it)."""
    root_dir: str
    override: ProviderOverride | None = None
    record: str | None = None
    artifacts: ArtifactLevel = "all"
    storage: Any = None
    """The result storage (a ``Path`` or a storage block): checkpoints, journals, answers."""
    services: Any = None
    """The Dask actor serving model calls and the ledger, when the run uses Dask."""
    checkpoints: CheckpointScope = field(default_factory=CheckpointScope)
    """How far the run's checkpoints reach (its lineage, fresh, across runs)."""
    manifests: str | None = None
    """Where checkpoint manifests go (``compile.manifest``)."""
    trace: str | None = None
    """The W3C traceparent of the run's span when the run is traced (``telemetry``)."""

    @classmethod
    def of(
        cls, workflow: Workflow, options: RunOptions, checkpoints: CheckpointScope | None = None
    ) -> RunSpec:
        """The spec of a run of ``workflow`` with ``options`` (paths made absolute)."""
        record = str(Path(options.record).resolve()) if options.record else None
        return cls(
            key=uuid.uuid4().hex,
            root_dir=str(workflow.root_dir),
            override=override_of(options),
            record=record,
            artifacts=options.artifact_level(),
            storage=options.storage_for(workflow.root_dir),
            checkpoints=checkpoints or CheckpointScope(fresh=options.fresh),
            manifests=str(manifest_dir(workflow.root_dir, options)),
        )

    def with_services(self, services: Any) -> RunSpec:
        return replace(self, services=services)


def manifest_dir(root: Path, options: RunOptions) -> Path:
    """Checkpoint manifests sit beside a folder result storage (``.folpipe/manifests`` by
    default), else in the workflow's ``.folpipe/manifests``."""
    storage = options.storage_for(Path(root))
    if isinstance(storage, Path):
        return storage.absolute().parent / "manifests"
    return Path(root) / ".folpipe" / "manifests"


def override_of(
    options: RunOptions, environ: Mapping[str, str] | None = None
) -> ProviderOverride | None:
    """``--provider`` / ``--replies`` (replies made absolute), else ``FOLPIPE_PROVIDER``."""
    if options.provider or options.replies:
        replies = str(Path(options.replies).resolve()) if options.replies else None
        return ProviderOverride(options.provider or "scripted", replies)
    found = override_from_env(os.environ if environ is None else environ)
    if found is not None and found.replies:
        return ProviderOverride(found.name, str(Path(found.replies).resolve()))
    return found


def provider_salt(
    task: Task, override: ProviderOverride | None, workflow: Workflow | None = None
) -> str:
    """The effective provider type of a task (an override changes what answers it); with
    ``workflow``, the checkpoint salt: plus a hash of the scripted replies / cassette turns
    answering the task (``providers.registry.checkpoint_salt``, issue 11 point 8)."""
    if workflow is not None:
        return checkpoint_salt(workflow, task, override)
    if override is not None:
        return canonical_type(override.name)
    return task.provider.type if task.provider is not None else ""


def provider_and_model(
    task: Task, override: ProviderOverride | None
) -> tuple[str | None, str | None]:
    """The provider type and model a task runs with (for tags)."""
    if override is not None:
        return canonical_type(override.name), None
    if task.provider is None:
        return None, None
    return task.provider.type, task.provider.model


class Services(Protocol):
    """Model calls and usage accounting of a run (``ModelServices`` or a proxy to it)."""

    ledger: CallLedger

    def provider_for(self, task: Task) -> Provider: ...

    async def report(self) -> dict[str, dict[str, Any]]: ...

    async def usage(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...


class ModelServices:
    """One run's provider pool and budget ledger, built from its workflow and spec."""

    def __init__(self, workflow: Workflow, spec: RunSpec) -> None:
        self.ledger = BudgetLedger(workflow)
        self.pool = ProviderPool(
            workflow,
            spec.override,
            secret_resolver=prefect_secret_resolver,
            call_guard=make_call_guard(workflow),
            record=Path(spec.record) if spec.record else None,
        )

    def provider_for(self, task: Task) -> Provider:
        return self.pool.for_task(task)

    async def report(self) -> dict[str, dict[str, Any]]:
        """``{task path: totals}`` of every model call made so far (failed attempts too)."""
        return self.ledger.report()

    async def usage(self) -> dict[str, Any]:
        """The run's usage by model and its budgets' headroom (the cost report)."""
        return {
            "models": self.ledger.model_report(),
            "budgets": self.ledger.budgets(),
            "unpriced_models": sorted(self.ledger.unpriced_models),
        }

    async def aclose(self) -> None:
        await self.pool.aclose()
