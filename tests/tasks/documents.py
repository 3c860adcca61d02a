"""Shared pieces of the evaluation's documents for the tests of tasks/ (no Docker, no torch)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from kcoral.tasks.cases import timing_method
from kcoral.tasks.harness.schema import Timing, TimingMethod

#: the server's default timing method, as a case file carries it
TIMING = timing_method(TimingMethod(), {})
TIMING_DOC = asdict(TIMING)


def const_timing(base: float, kern: float, null: float = 1.0, n: int = 12, **extra: Any) -> Timing:
    """Constant samples: every bootstrap resample gives the same ratio, so the interval is the point."""
    return Timing(
        baseline_ms=[base + null] * n,
        kernel_ms=[kern + null] * n,
        null_ms=[null] * n,
        stopped_by="stable",
        warmup_calls=3,
        **extra,
    )
