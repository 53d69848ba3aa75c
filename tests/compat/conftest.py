"""Fixtures for the folpipe 0.1.8 compatibility tests: folders from dicts, real Prefect runs."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

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


def _seed_cache() -> Path:
    """Where a verified copy of the sdist is kept between sessions (the user's cache folder),
    so the package index is asked once per machine, not once per test worker and session."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prefect-folpipe-tests"


def _pinned(data: bytes) -> bool:
    return hashlib.sha256(data).hexdigest() == SEED_SHA256


def _verified(archive: Path) -> bool:
    return archive.is_file() and _pinned(archive.read_bytes())


def _download_listed(archive: Path) -> bool:
    """The sdist straight from the package index's JSON listing (PEP 691; pip's
    ``PIP_INDEX_URL`` when set): a listing and a file, where ``pip download`` first prepares
    the sdist's metadata in a build environment of its own (over a minute with pip's cache
    cold). False when the index does not answer so, or the file's sha256 is not the pinned
    one: then pip fetches it."""
    import ssl

    import httpx

    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    listing_url = f"{index}/folpipe/"
    verify = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    try:
        with httpx.Client(timeout=60, follow_redirects=True, verify=verify) as client:
            accept = {"Accept": "application/vnd.pypi.simple.v1+json"}
            files = client.get(listing_url, headers=accept).raise_for_status().json()["files"]
            (entry,) = [f for f in files if f.get("filename") == archive.name]
            body = client.get(urljoin(listing_url, entry["url"])).raise_for_status().content
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return False
    if not _pinned(body):
        return False
    partial = archive.with_suffix(".partial")
    partial.write_bytes(body)
    partial.replace(archive)
    return True


def _fetch_seed(cache: Path) -> Path:
    """The sdist in ``cache``, unless a copy with the right sha256 is there: from the index's
    JSON listing, else with ``pip download``. One process fetches while the others (the other
    test worker) wait on a lock."""
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / "folpipe-0.1.8.tar.gz"
    with (cache / "folpipe-0.1.8.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _verified(archive):
            return archive
        if _download_listed(archive):
            return archive
        download = Path(tempfile.mkdtemp(dir=cache))
        command = [
            sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
            "--disable-pip-version-check", "-q", SEED, "-d", str(download),
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _skip_loudly(f"`pip download {SEED}` did not finish: {exc}")
        fetched = download / archive.name
        if done.returncode != 0 or not fetched.is_file():
            _skip_loudly(f"`pip download {SEED}` failed: {done.stderr.strip()[-500:]}")
        digest = hashlib.sha256(fetched.read_bytes()).hexdigest()
        assert digest == SEED_SHA256, f"{archive.name} has sha256 {digest}, not {SEED_SHA256}"
        fetched.replace(archive)
        shutil.rmtree(download, ignore_errors=True)
        return archive


@pytest.fixture(scope="session")
def seed_sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """folpipe 0.1.8's sdist, unpacked (fetched from the package index once per machine, its
    sha256 checked on every use). Skips loudly when it cannot be fetched (no package index)."""
    folder = tmp_path_factory.mktemp("folpipe-0.1.8")
    archive = _fetch_seed(_seed_cache())
    assert _verified(archive), f"{archive} changed on disk: its sha256 is not {SEED_SHA256}"
    with tarfile.open(archive) as unpacked:
        unpacked.extractall(folder, filter="data")
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
