"""Durations on the command line."""

from __future__ import annotations

import pytest

from kcoral.cli.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("2.5", 2.5), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0), ("1h30m", 5400.0), ("1.5m", 90.0),
     (" 10M ", 600.0)],
)  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5", "5d", "m", "1h 30m", "nan", "inf", "5mm", "s5"])
def test_what_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
