"""Shared pieces of the evaluation's documents for the tests of tasks/ (no Docker, no torch)."""

from __future__ import annotations

from dataclasses import asdict

from kcoral.runner.limits import EvalTiming
from kcoral.tasks.cases import timing_method

#: the server's default timing method, as a case file carries it
TIMING = timing_method(EvalTiming(), {})
TIMING_DOC = asdict(TIMING)
