"""Durations on the command line: ``90`` (seconds), ``90s``, ``5m``, ``1h``, ``1h30m``, ``1.5m``."""

from __future__ import annotations

import math
import re

import typer

_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """Seconds; ValueError for anything else (empty, negative, a unit it does not know, 0)."""
    value = text.strip().lower()
    try:
        seconds = float(value)
    except ValueError:
        parts = _PART.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise ValueError(f"{text!r} is not a duration (like 90, 90s, 5m, 1h30m)") from None
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{text!r}: a duration must be more than 0")
    return seconds


def Duration(text: str | float) -> float:  # noqa: N802 - typer's parser= takes a callable named like a type
    """typer's ``parser=`` for a duration option."""
    if isinstance(text, int | float):
        return float(text)
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
