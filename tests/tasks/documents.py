"""Shared pieces of the evaluation's documents for the tests of tasks/ (no Docker, no torch)."""

from __future__ import annotations

from dataclasses import asdict

from kcoral.tasks.cases import timing_method
from kcoral.tasks.harness.schema import TimingMethod

#: the server's default timing method, as a case file carries it
TIMING = timing_method(TimingMethod(), {})
TIMING_DOC = asdict(TIMING)
