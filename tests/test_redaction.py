"""Redaction: sensitive file names in any text, path forms, secret values."""

from __future__ import annotations

import pytest

from prefect_folpipe.redaction import (
    REDACTED,
    redact,
    redact_filenames,
    redact_secrets,
    secret_values,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (".env", REDACTED),
        ("cat /x/.env now", f"cat {REDACTED} now"),
        ("config/app.env", REDACTED),
        ("keys/server.pem", REDACTED),
        ("./secrets.yaml", REDACTED),
        ("secrets.json", REDACTED),
        ("cert.p12, other.PEM", f"{REDACTED}, {REDACTED}"),
        ("id.key:", f"{REDACTED}:"),
        ("'prod.env'", f"'{REDACTED}'"),
        ("found .env.", f"found {REDACTED}."),
        ("C:\\keys\\id.key", f"C:{REDACTED}"),
        (".env.local", REDACTED),
        ("/srv/app/.env.production", REDACTED),
        (
            "-rw-r--r-- 1 u g 12 Jan 1 .env\n-rw-r--r-- 1 u g 9 Jan 1 main.py",
            f"-rw-r--r-- 1 u g 12 Jan 1 {REDACTED}\n-rw-r--r-- 1 u g 9 Jan 1 main.py",
        ),
    ],
)
def test_sensitive_names_and_path_forms_are_redacted(text: str, expected: str) -> None:
    assert redact_filenames(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        ".environment",
        "app.env.example",
        ".env.example",
        "x.keys",
        "mysecrets.yaml",
        "os.environ['HOME']",
        "import secrets; secrets.token_hex(16)",
        "the environment is ready",
        "monkey.pemberton",
        "main.py and README.md",
    ],
)
def test_lookalikes_are_left_alone(text: str) -> None:
    assert redact_filenames(text) == text


def test_secret_values_are_masked() -> None:
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-abcdef123456",
        "GITHUB_TOKEN": "ghp_1234567890",
        "DB_PASSWORD": "hunter2hunter2",
        "APP_SECRET": "s3cr3t-value",
        "SHORT_TOKEN": "abc",
        "HOME": "/home/someone",
    }
    text = "keys sk-ant-abcdef123456 ghp_1234567890 hunter2hunter2 s3cr3t-value abc /home/someone"
    assert redact_secrets(text, env) == (
        f"keys {REDACTED} {REDACTED} {REDACTED} {REDACTED} abc /home/someone"
    )
    assert secret_values({"A_TOKEN": "1234567", "B_TOKEN": "123456789"}) == [
        "123456789",
        "1234567",
    ]


def test_redact_combines_and_honours_the_opt_out() -> None:
    env = {"X_API_KEY": "key-value-123"}
    text = "read .env got key-value-123"
    assert redact(text, env=env) == f"read {REDACTED} got {REDACTED}"
    assert redact(text, env=env, allow_sensitive_files=True) == f"read .env got {REDACTED}"


def test_redact_defaults_to_the_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-live-987654")
    assert redact("token tok-live-987654") == f"token {REDACTED}"


def test_extra_values_are_masked() -> None:
    text = "value plain-key-987 and short abc"
    assert redact_secrets(text, {}, extra=["plain-key-987", "abc"]) == (
        f"value {REDACTED} and short abc"
    )
