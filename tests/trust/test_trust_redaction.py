"""Issue 11 point 12: one redaction registry (end to end: ``test_trust_redaction_sinks``).

One registry (``workflow.redaction.SECRETS``) holds the values of secret-looking variables
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*PAT``, ``*CREDENTIAL*``), URL
passwords and keys resolved at run time (Secret blocks); the context, checkpoints, ``--json``,
artifacts, the cassette, logs and later tasks' prompts all mask through it.
"""

from __future__ import annotations

import uuid

import pytest

from prefect_folpipe.providers.replay import Normalizer
from prefect_folpipe.redaction import REDACTED, SECRETS, is_secret_name, redact_secrets

PAT = "ghp_patvalue0123456789abcdef"
AWS = "AKIAEXAMPLEKEY0123456"
DB_PASSWORD = "hunter2-db-pass"
DB_URL = f"postgres://app:{DB_PASSWORD}@db.internal:5432/prod"
CREDS = "cred-value-9876543210"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {
        "GITHUB_PAT": PAT,
        "AWS_ACCESS_KEY_ID": AWS,
        "DATABASE_URL": DB_URL,
        "SERVICE_CREDENTIALS": CREDS,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.mark.parametrize(
    "name", ["GITHUB_PAT", "AWS_ACCESS_KEY_ID", "MY_TOKEN", "db_password", "SVC_CREDENTIALS"]
)
def test_the_shared_pattern_list(name: str) -> None:
    assert is_secret_name(name)


def test_tools_and_the_recorder_mask_the_same_values(secret_env: dict[str, str]) -> None:
    text = f"pat={PAT} aws={AWS} url={DB_URL} bare={DB_PASSWORD} creds={CREDS}"
    for masked in (redact_secrets(text), Normalizer(None).text(text), SECRETS.text(text)):
        for value in (PAT, AWS, DB_PASSWORD, CREDS):
            assert value not in masked
        assert REDACTED in masked


def test_any_url_password_is_masked() -> None:
    assert SECRETS.text("see https://bob:s3@example.com/x") == (
        f"see https://bob:{REDACTED}@example.com/x"
    )


def test_a_value_registered_mid_run_is_masked_by_every_sink() -> None:
    key = f"sk-block-{uuid.uuid4().hex}"
    normalizer = Normalizer(None)  # built before the key is known, like the run's recorder
    SECRETS.register(key)
    assert key not in normalizer.text(f"echo {key}")
    assert key not in redact_secrets(f"echo {key}")


def test_the_process_environment_is_read_again_when_it_changes(monkeypatch) -> None:
    """``os.environ``'s secrets are kept between calls (every masked line asks) and found
    again as soon as the environment changes: set, changed, removed."""
    from prefect_folpipe import redaction

    secret, other = "sk-test-" + "a" * 24, "sk-test-" + "b" * 24
    assert secret not in redaction.env_secrets()
    monkeypatch.setenv("FOLPIPE_TEST_API_KEY", secret)
    assert secret in redaction.env_secrets()
    assert redaction.env_secrets() == redaction.env_secrets()  # kept: same answer
    monkeypatch.setenv("FOLPIPE_TEST_API_KEY", other)
    found = redaction.env_secrets()
    assert other in found and secret not in found
    monkeypatch.setenv("SOME_URL", f"postgresql://user:{secret}@db/x")
    assert secret in redaction.env_secrets()
    monkeypatch.delenv("FOLPIPE_TEST_API_KEY")
    monkeypatch.delenv("SOME_URL")
    found = redaction.env_secrets()
    assert other not in found and secret not in found
    env = {"X_TOKEN": secret}
    assert redaction.env_secrets(env) == {secret}  # an explicit mapping is read as it is
