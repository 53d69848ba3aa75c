"""Counted nouns read right (``1 pass``, ``2 passes``), and ``folpipe deploy`` prints a
schedule as people write it."""

from __future__ import annotations

import pytest

from prefect_folpipe._process.wording import noun, plural
from prefect_folpipe.cli.deploy import schedule_text


@pytest.mark.parametrize(
    ("count", "word", "expected"),
    [
        (1, "pass", "1 pass"),
        (8, "pass", "8 passes"),
        (0, "model call", "0 model calls"),
        (1, "model call", "1 model call"),
        (2, "task run state", "2 task run states"),
    ],
)
def test_plural(count: int, word: str, expected: str) -> None:
    assert plural(count, word) == expected


def test_noun_and_irregular_verbs() -> None:
    assert (noun(1, "key"), noun(3, "key")) == ("key", "keys")
    assert (noun(1, "was"), noun(2, "was")) == ("was", "were")
    assert noun(2, "analysis", "analyses") == "analyses"


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ({"interval": 60.0}, "every 60 s"),
        ({"interval": 0.5}, "every 0.5 s"),
        ({"cron": "0 3 * * *"}, "0 3 * * *"),
        ({"cron": "0 3 * * *", "timezone": "Europe/Paris"}, "0 3 * * * (Europe/Paris)"),
        ({"rrule": "FREQ=DAILY;BYHOUR=3"}, "FREQ=DAILY;BYHOUR=3"),
    ],
)
def test_schedule_text(schedule: dict, expected: str) -> None:
    assert schedule_text(schedule) == expected
