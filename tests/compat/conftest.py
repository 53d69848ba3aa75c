"""Fixtures for the folpipe 0.1.8 compatibility tests: folders from dicts, real Prefect runs."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def run(prefect_harness: str) -> Callable[..., Any]:
    """``run(path, context=None, **options)`` -> RunResult (real Prefect, session harness)."""
    from prefect_folpipe.compile import run_workflow

    def go(path: Path, context: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        return run_workflow(path, context, fresh=True, **kwargs)

    return go


def codes(diagnostics: Any) -> list[str]:
    """The codes of a list of diagnostics."""
    return [d.code for d in diagnostics]


# --- folpipe 0.1.8's own examples, fetched at test time ---------------------------------------

SEED = "folpipe==0.1.8"
SEED_SHA256 = "4d22dc9f4d2d0ce1d3a4f9e2cbbf567609e12c5639b77a8d5b0cb84a353f7650"
SEED_EXAMPLES = ("hello_world", "cv_pipeline", "release_pipeline")
STALE_OUTPUTS = ("output", ".staging")
"""Run artefacts the sdist ships (from a Windows run); removed so a run must write its own."""


def _skip_loudly(reason: str) -> None:
    message = f"folpipe 0.1.8's examples are NOT TESTED: {reason}"
    warnings.warn(message, UserWarning, stacklevel=2)
    pytest.skip(message)


@pytest.fixture(scope="session")
def seed_sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """folpipe 0.1.8's sdist, unpacked (fetched with pip; its sha256 checked). Skips loudly
    when it cannot be fetched (no package index)."""
    folder = tmp_path_factory.mktemp("folpipe-0.1.8")
    command = [
        sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
        "--disable-pip-version-check", "-q", SEED, "-d", str(folder),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _skip_loudly(f"`pip download {SEED}` did not finish: {exc}")
    archives = sorted(folder.glob("folpipe-0.1.8.tar.gz"))
    if done.returncode != 0 or not archives:
        _skip_loudly(f"`pip download {SEED}` failed: {done.stderr.strip()[-500:]}")
    digest = hashlib.sha256(archives[0].read_bytes()).hexdigest()
    assert digest == SEED_SHA256, f"{archives[0].name} has sha256 {digest}, not {SEED_SHA256}"
    with tarfile.open(archives[0]) as archive:
        archive.extractall(folder, filter="data")
    return folder / "folpipe-0.1.8"


@pytest.fixture
def seed_examples(seed_sdist: Path, tmp_path: Path) -> Path:
    """A fresh copy of the sdist's ``examples/`` under ``tmp_path`` (run from ``tmp_path``, as
    0.1.8's README runs them from its repository root), without shipped run artefacts."""
    target = tmp_path / "examples"
    shutil.copytree(seed_sdist / "examples", target)
    for name in SEED_EXAMPLES:
        for stale in STALE_OUTPUTS:
            shutil.rmtree(target / name / stale, ignore_errors=True)
    return target
