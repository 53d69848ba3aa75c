"""The throwaway-PostgreSQL helper explains itself where it cannot run (no PostgreSQL needed)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from . import postgres
from .postgres import PostgresUnavailable


def test_no_binaries_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres, "find_bindir", lambda: None)
    with pytest.raises(PostgresUnavailable, match=r"apt-get install -y postgresql"):
        postgres.start_postgres()


def test_failing_initdb_is_reported_and_cleaned_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # a world-readable dir: as root, initdb runs as the server user, who must reach it
    fake = Path(tempfile.mkdtemp(prefix="folpipe-fake-pg-bin-"))
    fake.chmod(0o755)
    made: list[Path] = []

    def make_root(user: str | None) -> Path:
        made.append(real_make_root(user))
        return made[-1]

    real_make_root = postgres._make_root
    monkeypatch.setattr(postgres, "_make_root", make_root)
    monkeypatch.setenv("FOLPIPE_PG_BINDIR", str(fake))
    try:
        for name in ("initdb", "pg_ctl", "psql"):
            script = fake / name
            script.write_text(f"#!/bin/sh\necho 'fake {name} says no' >&2\nexit 3\n")
            script.chmod(0o755)
        with pytest.raises(PostgresUnavailable, match=r"initdb .* exit 3: fake initdb says no"):
            postgres.start_postgres()
    finally:
        shutil.rmtree(fake)
    assert made and not made[0].exists(), "the cluster's temp dir is removed"


def test_required_postgres_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(postgres.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="FOLPIPE_REQUIRE_POSTGRES=1"):
        postgres.skip_loudly("no binaries")
    monkeypatch.delenv(postgres.REQUIRE_ENV)
    monkeypatch.setattr(postgres, "SKIP_REASONS", [])
    with pytest.warns(postgres.PostgresSkipWarning), pytest.raises(pytest.skip.Exception):
        postgres.skip_loudly("no binaries")
    assert postgres.SKIP_REASONS == ["no binaries"]
