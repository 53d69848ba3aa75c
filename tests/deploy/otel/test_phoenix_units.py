"""Where the Phoenix tests find Phoenix, and when its absence fails them instead of skipping."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from .. import phoenix


def test_folpipe_phoenix_names_the_executable(monkeypatch, tmp_path: Path) -> None:
    program = tmp_path / "phoenix"
    program.write_text("#!/bin/sh\n")
    monkeypatch.setenv("FOLPIPE_PHOENIX", str(program))
    assert phoenix.executable() == program
    monkeypatch.setenv("FOLPIPE_PHOENIX", str(tmp_path / "nowhere"))
    assert phoenix.executable() is None


def test_the_default_is_the_repositorys_own_virtualenv(monkeypatch, tmp_path: Path) -> None:
    assert Path(__file__).resolve().parents[3] / ".venv-phoenix" == phoenix.VENV
    monkeypatch.delenv("FOLPIPE_PHOENIX", raising=False)
    monkeypatch.setattr(phoenix, "VENV", tmp_path / ".venv-phoenix")
    assert phoenix.executable() is None
    program = tmp_path / ".venv-phoenix" / "bin" / "phoenix"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    assert phoenix.executable() == program


@pytest.mark.parametrize(
    ("env", "fails"),
    [
        ({}, False),
        ({"CI": "true"}, True),
        ({"CI": "false"}, False),
        ({"FOLPIPE_REQUIRE_PHOENIX": "1"}, True),
    ],
)
def test_a_missing_phoenix_skips_except_in_ci(monkeypatch, env: dict, fails: bool) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("FOLPIPE_REQUIRE_PHOENIX", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    outcome = pytest.fail.Exception if fails else pytest.skip.Exception
    warned = contextlib.nullcontext() if fails else pytest.warns(UserWarning, match="Phoenix")
    with pytest.raises(outcome, match="Arize Phoenix is not installed"), warned:
        phoenix.missing()
