"""The temporary server folpipe starts sends no analytics and logs only what is critical,
unless the user chose otherwise: stopped while it still recorded a big run, it printed
"Error flushing" tracebacks into the user's terminal."""

from __future__ import annotations

import os

import pytest

from prefect_folpipe.compile.infra import _server

VARIABLES = ("PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_SERVER_LOGGING_LEVEL")


@pytest.fixture
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's settings: neither variable set (this suite sets analytics off for itself)."""
    import prefect.settings

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(prefect.settings, "get_current_settings", prefect.settings.Settings)


def test_set_only_around_the_start(unset: None) -> None:
    with _server._server_defaults():
        assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
        assert os.environ["PREFECT_SERVER_LOGGING_LEVEL"] == "CRITICAL"
    assert not any(name in os.environ for name in VARIABLES)


def test_the_users_choice_is_kept(unset: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_SERVER_LOGGING_LEVEL", "DEBUG")
    with _server._server_defaults():
        assert os.environ["PREFECT_SERVER_LOGGING_LEVEL"] == "DEBUG"
        assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert os.environ["PREFECT_SERVER_LOGGING_LEVEL"] == "DEBUG"
    assert "PREFECT_SERVER_ANALYTICS_ENABLED" not in os.environ
